//go:build unix

package natsbus

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A device or a FIFO given as credentials, or found as a node's seed, is
// refused without being read (a FIFO's open does not wait for a writer);
// a regular file over the bound is refused.
func TestSpecialFilesAreNoCredentials(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f.nk")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.creds")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("x", MaxSecretBytes+1)), 0o600))
	for _, path := range []string{"/dev/zero", fifo} {
		assert.ErrorContains(t, CheckCreds(path), "is not a regular file", path)
	}
	assert.ErrorContains(t, CheckCreds(big), "over 65536 bytes")
	_, _, err := NodeKey(dir, "f")
	assert.ErrorContains(t, err, "is not a regular file")
}

// A seed its group or others may read is refused, as ssh refuses such a
// private key.
func TestANodeSeedOpenToOthersIsRefused(t *testing.T) {
	dir := t.TempDir()
	_, _, err := NodeKey(dir, "alpha")
	require.NoError(t, err)
	seed := filepath.Join(dir, "alpha.nk")
	require.NoError(t, os.Chmod(seed, 0o644))
	_, _, err = NodeKey(dir, "alpha")
	assert.ErrorContains(t, err, "is open to others (-rw-r--r--)")
	assert.ErrorContains(t, err, "chmod 600 "+seed)
}
