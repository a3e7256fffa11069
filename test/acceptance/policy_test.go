package acceptance

// The trust policy on the built binary: a rule added with `policy add`
// refuses a send with not_allowed (exit 17) before the courier starts.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyDenyRefusesASendBeforeTheCourier(t *testing.T) {
	w := newSendWorld(t, false)
	xdg := t.TempDir()
	env := append(w.env(t, "ok"), "XDG_CONFIG_HOME="+xdg, "PEERCTL_SERVE=off")
	run := func(args ...string) result {
		return catRun(t, w.sessions, runOpts{Env: env}, append([]string{"--config-dir", w.config}, args...)...)
	}
	r := run("policy", "add", "--from", "cli", "--to", "inb?x", "deny")
	require.Equal(t, 0, r.Code, string(r.Stderr))
	fi, err := os.Stat(filepath.Join(xdg, "peerctl", "policy"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	r = run("send", "inbox", "hello")
	assert.Equal(t, 17, r.Code, string(r.Stderr))
	assert.Contains(t, string(r.Stderr), "peerctl: not_allowed: deny by rule 1 (deny from=cli to=inb?x): cli to \"inbox\"")
	assert.False(t, w.courierStarted(t), "nothing ran")
	assert.Empty(t, w.listener.Frames())

	r = run("policy", "check", "--from", "mcp", "--to", "inbox")
	require.Equal(t, 0, r.Code, string(r.Stderr))
	assert.Contains(t, string(r.Stdout), "allow by default rule 2 (allow from=* to=*)")

	r = run("policy", "rm", "1")
	require.Equal(t, 0, r.Code, string(r.Stderr))
	r = run("send", "--transport", "socket", "--no-confirm", "inbox", "hello")
	assert.Equal(t, 0, r.Code, string(r.Stderr))
	assert.Len(t, w.listener.Wait(1), 1)
}
