//go:build unix

package outbox_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
)

// perm is path's permission bits (Lstat).
func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

// The outbox, its WAL and its SHM are 0600 in a 0700 folder, whatever the
// umask: other users read neither the messages nor the WAL's copy of them.
func TestOpenMakesPrivateFiles(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", outbox.FileName)
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	_, _, err = s.Put(ctx, msg("k"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), perm(t, filepath.Dir(path)))
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		assert.Equal(t, os.FileMode(0o600), perm(t, p), p)
	}
}

// A state folder and outbox an older peerctl left open to others (0755,
// 0644) are narrowed when opened, their messages kept.
func TestOpenTightensALooseStateFolder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", outbox.FileName)
	s, err := outbox.Open(ctx, path)
	require.NoError(t, err)
	m, _, err := s.Put(ctx, msg("kept"))
	require.NoError(t, err)
	// A reader keeps the WAL and SHM in place while the files are loosened.
	r, err := outbox.OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, s.Close())
	_, _, err = r.Get(ctx, m.ID)
	require.NoError(t, err)
	files := []string{path, path + "-wal", path + "-shm"}
	for _, p := range files {
		if _, err := os.Stat(p); err == nil {
			require.NoError(t, os.Chmod(p, 0o644))
		}
	}
	require.NoError(t, os.Chmod(filepath.Dir(path), 0o755))

	s, err = outbox.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, os.FileMode(0o700), perm(t, filepath.Dir(path)))
	for _, p := range files {
		if _, err := os.Stat(p); err == nil {
			assert.Equal(t, os.FileMode(0o600), perm(t, p), p)
		}
	}
	got, _, err := s.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, "rebase please", got.Text)
}

// A state folder that is a symlink, an outbox file that is a symlink, and
// (as root) a folder another user owns are refused, and nothing in them
// is changed.
func TestOpenRefusesAStateFolderItCannotTrust(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o700))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(real, link))
	_, err := outbox.Open(ctx, filepath.Join(link, outbox.FileName))
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, err.Error(), "not a folder (a symlink?)")
	assert.NoFileExists(t, filepath.Join(real, outbox.FileName))

	other := filepath.Join(base, "other-file")
	require.NoError(t, os.WriteFile(other, []byte("not yours"), 0o600))
	dir := filepath.Join(base, "state")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Symlink(other, filepath.Join(dir, outbox.FileName)))
	_, err = outbox.Open(ctx, filepath.Join(dir, outbox.FileName))
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, err.Error(), "not a regular file (a symlink?)")
	b, err := os.ReadFile(other)
	require.NoError(t, err)
	assert.Equal(t, "not yours", string(b))

	if os.Geteuid() != 0 {
		t.Log("not root: the folder of another user is not made")
		return
	}
	theirs := filepath.Join(base, "theirs")
	require.NoError(t, os.Mkdir(theirs, 0o755))
	require.NoError(t, os.Chown(theirs, nobody, nobody))
	_, err = outbox.Open(ctx, filepath.Join(theirs, outbox.FileName))
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, err.Error(), "belongs to uid 65534")
	assert.NoFileExists(t, filepath.Join(theirs, outbox.FileName))
	assert.Equal(t, os.FileMode(0o755), perm(t, theirs), "another user's folder is left as it is")
}
