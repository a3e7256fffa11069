//go:build unix

package harnessfile_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/internal/harnessfile"
)

// A FIFO (no writer: an open without O_NONBLOCK would wait forever) is
// refused, never opened for a read.
func TestReadRefusesAFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "4652.json")
	require.NoError(t, unix.Mkfifo(p, 0o600))
	_, _, err := harnessfile.Read(p, 64)
	require.Error(t, err)
	assert.Equal(t, "not a regular file (p---------)", err.Error())
}
