package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

func TestHostsAddListRemove(t *testing.T) {
	cfg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": cfg}
	r := evRun(t, env, nil, "hosts", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "no hosts in "+filepath.Join(cfg, "peerctl", "hosts"))

	r = evRun(t, env, nil, "hosts", "add", "build-box", "--set", "config-dir=/home/dev/.claude", "--set", "claude=/opt/my claude")
	require.Equal(t, 0, r.code, r.stderr)
	hostsPath := filepath.Join(cfg, "peerctl", "hosts")
	assert.Equal(t, "peerctl: added host build-box in "+hostsPath+"\n", r.stderr, "a confirmation")
	assert.Empty(t, r.stdout)
	r = evRun(t, env, nil, "hosts", "add", "dev@10.0.0.7")
	require.Equal(t, 0, r.code, r.stderr)
	r = evRun(t, env, nil, "hosts", "add", "build-box", "--set", "claude=", "--set", "peerctl=/p/peerctl")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "peerctl: updated host build-box in "+hostsPath+"\n", r.stderr)
	raw, err := os.ReadFile(filepath.Join(cfg, "peerctl", "hosts"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), "[build-box]\npeerctl = /p/peerctl\nconfig-dir = /home/dev/.claude\n\n[dev@10.0.0.7]\n")

	r = evRun(t, env, nil, "hosts", "list", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, `[{"host":"build-box","peerctl":"/p/peerctl","settings":{"config-dir":"/home/dev/.claude"}},
		{"host":"dev@10.0.0.7","peerctl":"","settings":{}}]`, r.stdout)
	r = evRun(t, env, nil, "hosts", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "dev@10.0.0.7  peerctl on PATH")

	r = evRun(t, env, nil, "hosts", "remove", "build-box")
	require.Equal(t, 0, r.code, r.stderr)
	r = evRun(t, env, nil, "hosts", "remove", "build-box")
	assert.Equal(t, wire.ExitNotFound, r.code, "not found, not a usage error")
	assert.Contains(t, r.stderr, `peerctl: not_found: no host "build-box" in the hosts file`)
	assert.NotContains(t, r.stderr, "--help")
}

func TestHostsBadInput(t *testing.T) {
	cfg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": cfg}
	for name, args := range map[string][]string{
		"option as host":  {"hosts", "add", "-oProxyCommand=touch x"},
		"space in host":   {"hosts", "add", "a b"},
		"this machine":    {"hosts", "add", "."},
		"unknown setting": {"hosts", "add", "far", "--set", "proxy=x"},
		"no equals":       {"hosts", "add", "far", "--set", "claude"},
		"newline value":   {"hosts", "add", "far", "--set", "claude=a\nb"},
		"check an option": {"hosts", "check", "--", "-oProxyCommand=x"},
	} {
		r := evRun(t, env, nil, args...)
		assert.NotEqual(t, 0, r.code, name)
		if name != "newline value" {
			assert.Equal(t, 2, r.code, "%s: %s", name, r.stderr)
		}
	}
	_, err := os.Stat(filepath.Join(cfg, "peerctl", "hosts"))
	assert.True(t, os.IsNotExist(err), "nothing was written")

	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "peerctl"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfg, "peerctl", "hosts"), []byte("[far]\n\nproxy = x\n"), 0o600))
	r := evRun(t, env, nil, "hosts", "list")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "hosts: malformed hosts file: line 3: unknown key \"proxy\"")
}

// TestListHostsFlag: list --hosts is this machine and every host of the
// hosts file; a malformed file is the error naming its line.
func TestListHostsFlag(t *testing.T) {
	cfg := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": cfg, "CLAUDE_CONFIG_DIR": t.TempDir(), "QWEN_HOME": t.TempDir(), "HOME": t.TempDir()}
	require.Equal(t, 0, evRun(t, env, nil, "hosts", "add", "box").code)
	require.Equal(t, 0, evRun(t, env, nil, "hosts", "add", "lab").code)
	f := &fakeRemote{results: map[string]ports.RemoteResult{"box": {Stdout: []byte("[]")}, "lab": {Stdout: []byte("[]")}}}
	r := evRun(t, env, func(c *factory) { c.remoteCh = f }, "list", "--hosts", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, "[]", r.stdout)
	var called []string
	for _, c := range f.calls {
		called = append(called, c.Dest.String())
	}
	assert.ElementsMatch(t, []string{"box", "lab"}, called, "every host of the file, and this machine read here")

	require.NoError(t, os.WriteFile(filepath.Join(cfg, "peerctl", "hosts"), []byte("[box]\n[box]\n"), 0o600))
	r = evRun(t, env, func(c *factory) { c.remoteCh = f }, "list", "--hosts")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "line 2: host \"box\" is listed twice")
}
