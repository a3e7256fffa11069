//go:build linux

package acceptance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The outbox read as a second Unix user (uid 65534, run by root): the
// database, its WAL and SHM and the state folder refuse that user, while
// a file beside them open to everyone is read (so it is peerctl's modes
// that refuse, not a folder above); and the files hold neither the
// sender's environment nor a secret it had: a planted variable, an API
// key, an opencode server password. The sender starts the service on
// demand, so the service has them in its environment too.
func TestServeOutboxUnreadableByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a reader as another uid")
	}
	cat, err := exec.LookPath("cat")
	require.NoError(t, err)
	ls, err := exec.LookPath("ls")
	require.NoError(t, err)
	w := newServeWorld(t)
	for _, d := range []string{w.state, filepath.Dir(w.state)} {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	w.addSession(t, "reviewer")
	const planted, apiKey, password = "planted-FAKE-value-31", "sk-ant-FAKE-never-stored-62", "opencode-FAKE-password-93"
	home := t.TempDir()
	env := append(w.env(t), "HOME="+home, "PEERCTL_PLANTED_SECRET="+planted, "ANTHROPIC_API_KEY="+apiKey,
		"OPENCODE_SERVER_USERNAME=opencode", "OPENCODE_SERVER_PASSWORD="+password)
	send := func(args ...string) {
		t.Helper()
		r := catRun(t, w.sessions, runOpts{Env: env}, append([]string{"--config-dir", w.config, "send", "--json"}, args...)...)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}
	send("--durable=1h", "--key", "to-reviewer", "reviewer", "delivered while another user looks")
	send("--durable=1h", "--key", "to-nobody", "nobody-by-this-name", "kept while another user looks")
	require.NotZero(t, w.servePID(t), "the sender started the service")
	require.Len(t, w.outbox(t), 2)

	files := []string{w.db(), w.db() + "-wal", w.db() + "-shm"}
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err, "the running service's %s", filepath.Base(f))
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	fi, err := os.Stat(w.dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	asNobody := func(prog string, args ...string) (string, error) {
		c := exec.Command(prog, args...)
		c.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	open := filepath.Join(w.state, "open-to-all")
	require.NoError(t, os.WriteFile(open, []byte("anyone reads this\n"), 0o644))
	out, err := asNobody(cat, open)
	require.NoError(t, err, "uid 65534 reaches the state folder's parent: %s", out)
	for _, f := range append(files, filepath.Join(w.dir(), "serve.log")) {
		out, err := asNobody(cat, f)
		assert.Error(t, err, "uid 65534 read %s", f)
		assert.True(t, strings.Contains(out, "Permission denied"), "%s: %.200q", f, out)
	}
	out, err = asNobody(ls, "-la", w.dir())
	assert.Error(t, err, "uid 65534 listed the state folder: %s", out)
	assert.Contains(t, out, "Permission denied")

	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, b...)
	}
	assert.True(t, bytes.Contains(all, []byte("kept while another user looks")), "the files read are the outbox's")
	for _, gone := range []string{planted, "PEERCTL_PLANTED_SECRET", apiKey, "ANTHROPIC_API_KEY", password, "OPENCODE_SERVER_PASSWORD", home} {
		assert.False(t, bytes.Contains(all, []byte(gone)), "%s is in the outbox's files", gone)
	}
	assert.False(t, bytes.Contains(all, []byte(os.Getenv("PATH"))), "the sender's PATH is in the outbox's files")
}
