//go:build unix

package courierexec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A killed peerctl's courier folder (Claude Code's session files of the
// courier inside) is removed when the next courier starts; a running
// peerctl's, this process's own and anything else are left alone.
func TestPrivateDirRemovesTheFoldersOfGonePeerctls(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	gonePID := dead.Process.Pid

	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Join(p, "config", "sessions"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(p, "config", "sessions", "1.json"), []byte("{}"), 0o600))
		return p
	}
	gone := mk(privateDirPrefix + strconv.Itoa(gonePID) + "-123")
	running := mk(privateDirPrefix + strconv.Itoa(os.Getppid()) + "-456")
	own := mk(privateDirPrefix + strconv.Itoa(os.Getpid()) + "-789")
	other := mk("peerctl-courier-notapid")
	unrelated := mk("something-else-" + strconv.Itoa(gonePID) + "-1")

	root, remove, err := privateDir()
	require.NoError(t, err)
	defer remove()
	assert.Equal(t, tmp, filepath.Dir(root))
	assert.Contains(t, filepath.Base(root), privateDirPrefix+strconv.Itoa(os.Getpid())+"-")

	assert.NoDirExists(t, gone, "a gone peerctl's folder is removed")
	for _, kept := range []string{running, own, other, unrelated} {
		assert.DirExists(t, kept)
	}
}
