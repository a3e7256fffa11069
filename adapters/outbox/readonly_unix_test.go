//go:build unix

package outbox_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
)

// readOnlyChild names, in a child of this test binary, the folder whose
// read-only state it checks.
const readOnlyChild = "OUTBOX_TEST_READ_ONLY_DIR"

// nobody is the unprivileged uid and gid the checks run as under root.
const nobody = 65534

// A state folder the user cannot write: Open refuses with an *Error and
// makes nothing; an outbox already there, in a folder and file the user
// cannot write, is refused too and left byte for byte. Root writes
// anywhere, so as root (CI) the checks run in a copy of this test binary
// as uid 65534.
func TestReadOnlyFolderRefused(t *testing.T) {
	if dir := os.Getenv(readOnlyChild); dir != "" {
		readOnlyChecks(t, dir)
		return
	}
	ctx := context.Background()
	base, err := os.MkdirTemp("", "outbox-ro-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = filepath.WalkDir(base, func(p string, _ os.DirEntry, _ error) error { _ = os.Chmod(p, 0o700); return nil })
		_ = os.RemoveAll(base)
	})
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(base, "empty"), 0o555))
	full := filepath.Join(base, "full", outbox.FileName)
	s, err := outbox.Open(ctx, full)
	require.NoError(t, err)
	_, _, err = s.Put(ctx, msg("kept"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, os.Chmod(full, 0o444))
	require.NoError(t, os.Chmod(filepath.Dir(full), 0o555))
	if os.Geteuid() != 0 {
		readOnlyChecks(t, base)
		return
	}
	self, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(base, "outbox.test")
	copyFile(t, self, bin)
	cmd := exec.Command(bin, "-test.run", "^TestReadOnlyFolderRefused$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), readOnlyChild+"="+base)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the checks as uid %d:\n%s", nobody, out)
	assert.Contains(t, string(out), "--- PASS: TestReadOnlyFolderRefused", "%s", out)
}

func readOnlyChecks(t *testing.T, base string) {
	require.NotZero(t, os.Geteuid(), "root writes anywhere: these checks mean nothing as root")
	ctx := context.Background()
	absent := filepath.Join(base, "empty", "state", outbox.FileName)
	_, err := outbox.Open(ctx, absent)
	var oe *outbox.Error
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, absent, oe.Path)
	assert.NoDirExists(t, filepath.Dir(absent), "nothing made")

	full := filepath.Join(base, "full", outbox.FileName)
	before, err := os.ReadFile(full)
	require.NoError(t, err)
	s, err := outbox.Open(ctx, full)
	if err == nil {
		_ = s.Close()
	}
	require.ErrorAs(t, err, &oe, "an outbox this user cannot write is refused when it is opened, not at the first send")
	after, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the file is left as it was")
}

func copyFile(t *testing.T, from, to string) {
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
