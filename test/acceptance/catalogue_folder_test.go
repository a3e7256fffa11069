//go:build unix

package acceptance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatalogueFolder: the registry folder itself is missing, empty,
// unreadable, or a file. A missing or empty folder is "no sessions" (exit 0);
// one that cannot be listed is an error (exit 1) that names the folder.
func TestCatalogueFolder(t *testing.T) {
	rows := []struct {
		desc     string
		setup    func(t *testing.T, config string)
		code     int
		stdout   string // exact, for exit 0
		inStderr string
	}{
		{desc: "missing", setup: func(t *testing.T, config string) {}, code: 0, stdout: "[]\n", inStderr: "does not exist"},
		{desc: "empty", setup: func(t *testing.T, config string) {
			require.NoError(t, os.Mkdir(filepath.Join(config, "sessions"), 0o700))
		}, code: 0, stdout: "[]\n"},
		{desc: "only a key file and dot files", setup: func(t *testing.T, config string) {
			s := filepath.Join(config, "sessions")
			require.NoError(t, os.Mkdir(s, 0o700))
			catWrite(t, s, "4652.0000000000000000000000000000000000000000000000000000000000000000.key", []byte(`{"peerToken":"x"}`))
			catWrite(t, s, ".4652.json.swp", []byte("{"))
		}, code: 0, stdout: "[]\n"},
		{desc: "a file instead of a folder", setup: func(t *testing.T, config string) {
			require.NoError(t, os.WriteFile(filepath.Join(config, "sessions"), []byte("{}"), 0o600))
		}, code: 1, inStderr: "not a directory"},
		{desc: "a symlink loop instead of a folder", setup: func(t *testing.T, config string) {
			require.NoError(t, os.Symlink("sessions", filepath.Join(config, "sessions")))
		}, code: 1, inStderr: "read registry"},
	}
	for _, row := range rows {
		t.Run(row.desc, func(t *testing.T) {
			config := t.TempDir()
			row.setup(t, config)
			sessions := filepath.Join(config, "sessions")
			r := catRun(t, sessions, runOpts{}, "--config-dir", config, "list", "--all", "--json")
			assert.Equal(t, row.code, r.Code, "stderr: %s", r.Stderr)
			if row.code == 0 {
				assert.Equal(t, row.stdout, string(r.Stdout))
			} else {
				// Only what the other harnesses' registries hold (none here):
				// the exit and the warning say Claude Code's was not read.
				assert.Equal(t, "[]\n", string(r.Stdout))
				assert.Contains(t, string(r.Stderr), "warning: claude-code: registry not read")
				assert.Contains(t, string(r.Stderr), sessions, "the error names the folder")
			}
			assert.Contains(t, string(r.Stderr), row.inStderr)
		})
	}
}

// TestCatalogueFolderUnreadable: a folder the user may not list. Tests run
// as root here, for whom mode 000 stops nothing; so as root peerctl runs as
// the unprivileged user "nobody" (uid/gid 65534) against a folder with mode
// 000, which is the situation the row is about. Without root the folder is
// simply chmod 000.
func TestCatalogueFolderUnreadable(t *testing.T) {
	base, err := os.MkdirTemp("", "pc-unreadable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(base, "config", "sessions"), 0o700); _ = os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755)) // nobody must reach the binary and the config dir
	config := filepath.Join(base, "config")
	sessions := filepath.Join(config, "sessions")
	require.NoError(t, os.MkdirAll(sessions, 0o755))
	catWrite(t, sessions, "1.json", []byte(`{"pid":1}`))
	require.NoError(t, os.Chmod(sessions, 0o000))

	bin := peerctlBin(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// Copy the binary where nobody can run it.
		data, err := os.ReadFile(bin)
		require.NoError(t, err)
		bin = filepath.Join(base, "peerctl")
		require.NoError(t, os.WriteFile(bin, data, 0o755))
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	before := catSnapshot(t, sessions)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config-dir", config, "list", "--all", "--json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Skipf("cannot run peerctl as an unprivileged user here: %v", err)
	}
	require.Error(t, err, "stdout: %s", stdout.Bytes())
	assert.Equal(t, 1, ee.ExitCode())
	assert.Equal(t, "[]\n", stdout.String(), "only the other harnesses' sessions (none)")
	assert.Contains(t, stderr.String(), "permission denied")
	assert.Contains(t, stderr.String(), sessions)
	assert.Equal(t, before, catSnapshot(t, sessions))
}
