package cli

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/mcpserve"
)

// doctor's mcp row: ok with the path of the peerctl-mcp that peerctl mcp
// would run, ok in a program that serves itself, a warning without one
// (the plugin's MCP server, peerctl mcp, cannot start), and a warning for a peerctl-mcp that is this very program.
// (What peerctl mcp runs; that a peerctl is on PATH at all: TestDoctorMCPSaysPeerctlIsNotOnPath.)
func TestDoctorMCPRow(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executables here are files with mode bits")
	}
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	self := filepath.Join(dir, "peerctl")
	require.NoError(t, os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755))
	c := newFactory(nil, nil, nil, func(string) string { return "" })
	c.executable = func() (string, error) { return self, nil }

	r := newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "warn", r.Health)
	assert.Contains(t, r.Note, "peerctl mcp (the Claude Code plugin's MCP server), watch, outbox, serve (send --durable), the fleet's bus (serve --nats, list --fleet, --host nats:NODE) and --jq need it",
		"every command that refuses without it")
	assert.NotContains(t, r.Note, "go run")

	// This build, and a peerctl-mcp that says it is the same build.
	c.buildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/peerctl/peerctl", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}}, true
	}
	same := `{"module":"github.com/peerctl/peerctl","version":"v1.2.3","revision":"0123456789abcdef","modified":false}`
	beside := filepath.Join(dir, "peerctl-mcp")
	require.NoError(t, os.WriteFile(beside, []byte("#!/bin/sh\necho '"+same+"'\n"), 0o644))
	r = newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "warn", r.Health, "there but not executable")
	assert.Contains(t, r.Note, "permission denied")
	require.NoError(t, os.Chmod(beside, 0o755))
	r = newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "ok", r.Health, r.Note)
	assert.Equal(t, beside, r.Path)

	older := strings.Replace(same, "0123456789abcdef", "fedcba9876543210", 1)
	require.NoError(t, os.WriteFile(beside, []byte("#!/bin/sh\necho '"+older+"'\n"), 0o755))
	r = newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "warn", r.Health, "another build")
	assert.Contains(t, r.Note, "is another build: v1.2.3 (fedcba987654")
	require.NoError(t, os.WriteFile(beside, []byte("#!/bin/sh\necho '"+same+"'\n"), 0o755))

	c.executable = func() (string, error) { return beside, nil } // a peerctl build named peerctl-mcp
	r = newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "warn", r.Health)
	assert.True(t, strings.HasPrefix(r.Note, beside+" has no MCP server linked in"), r.Note)

	c.serveMCP = mcpserve.Serve
	r = newMCPDoctor(c).program(context.Background())
	assert.Equal(t, "ok", r.Health)
	assert.Contains(t, r.Note, "linked into this program")
}

// A peerctl without the fleet's bus client runs list --fleet, serve with a
// bus, a command with --host nats:NODE and policy nats-config as
// peerctl-mcp; with none there, the error says what needed it and how to
// get it, before anything connects, serves, or reads stdin.
func TestBusCommandsNeedPeerctlMCP(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executables here are files with mode bits")
	}
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		who  string
	}{
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:1"}, "list --fleet runs peerctl-mcp"},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--node", "n1"}, "serve with a bus (--nats, $PEERCTL_NATS) runs peerctl-mcp"},
		{[]string{"list", "--host", "nats:n2"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"list", "--host", "nats:n2", "--nats", "nats://127.0.0.1:1"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"show", "--host", "nats:n2", "cc:x"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"watch", "--host", "nats:n2"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"send", "--host", "nats:n2", "x", "-"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"send", "nats:v1:n2:cc-peer:v1:4242:peer:/tmp/peer.sock", "hi"}, "--host nats:NODE runs peerctl-mcp"},
		{[]string{"policy", "nats-config", "--keys", filepath.Join(dir, "keys"), "n1"}, "policy nats-config runs peerctl-mcp"},
	} {
		const text = "the text, left for peerctl-mcp"
		in := strings.NewReader(text)
		r := evRun(t, map[string]string{"HOME": dir, "XDG_STATE_HOME": t.TempDir(), "PEERCTL_NATS": "nats://127.0.0.1:1", "PEERCTL_NODE": "n1"}, func(c *factory) {
			c.io.in = in
			c.executable = func() (string, error) { return filepath.Join(dir, "peerctl"), nil }
		}, tc.args...)
		assert.NotEqual(t, 0, r.code, "%q", tc.args)
		assert.Contains(t, r.stderr, tc.who, "%q", tc.args)
		assert.Contains(t, r.stderr, "make build (bin/peerctl and bin/peerctl-mcp)", "%q", tc.args)
		assert.NoDirExists(t, filepath.Join(dir, "keys"), "%q", tc.args)
		assert.Equal(t, len(text), in.Len(), "%q read stdin", tc.args)
	}
}
