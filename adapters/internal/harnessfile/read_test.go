package harnessfile_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/internal/harnessfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "4652.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"pid":4652}`), 0o600))
	b, mod, err := harnessfile.Read(p, 64)
	require.NoError(t, err)
	assert.Equal(t, `{"pid":4652}`, string(b))
	assert.False(t, mod.IsZero())

	exact := filepath.Join(dir, "exact.json")
	require.NoError(t, os.WriteFile(exact, []byte(strings.Repeat(" ", 64)), 0o600))
	b, _, err = harnessfile.Read(exact, 64)
	require.NoError(t, err)
	assert.Len(t, b, 64)

	_, _, err = harnessfile.Read(dir, 64)
	require.Error(t, err)
	assert.False(t, harnessfile.IsTooLarge(err))
	assert.Contains(t, err.Error(), "not a regular file")

	big := filepath.Join(dir, "5031.json")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat(" ", 65)), 0o600))
	_, _, err = harnessfile.Read(big, 64)
	require.Error(t, err)
	assert.True(t, harnessfile.IsTooLarge(err))
	assert.Equal(t, "65 bytes, over the 64-byte cap; not read", err.Error())

	_, _, err = harnessfile.Read(filepath.Join(dir, "absent.json"), 64)
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.NotContains(t, err.Error(), dir, "the path is the caller's to say")

	if os.Symlink(p, filepath.Join(dir, "link.json")) == nil {
		_, _, err = harnessfile.Read(filepath.Join(dir, "link.json"), 64)
		require.Error(t, err)
		assert.Equal(t, "symlink, not followed", err.Error())
	}
}
