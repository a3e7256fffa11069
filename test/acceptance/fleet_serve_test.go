//go:build unix

package acceptance

// list --fleet answered by a running service on the bus, hermetic (an
// embedded NATS server, test/natstest): the service keeps every node's
// presence from one watch of the bucket and answers list --fleet from it
// over its socket, with the document the bus gives when read directly;
// peerctl does not start the bus client program for it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

func TestFleetListAnsweredByTheServiceIsTheBussDocument(t *testing.T) {
	peerctlWithMCP(t) // the service on the bus, and list --fleet read directly, run in peerctl-mcp
	url := natstest.Start(t)
	beta := newServeWorld(t)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	beta.startServe(t)

	join, leave := busNodes(t, url)
	bad := wire.Session{Harness: "claude-code", SessionID: "00000009-1111-2222-3333-444455556666", PID: 9, Name: "x", Status: "idle",
		Verdict: "live", Addressable: true, Endpoint: "ssh:v1:far:cc-peer:v1:9:x:/run/cc/9.sock"}
	ok := wire.Session{Harness: "claude-code", SessionID: "00000007-1111-2222-3333-444455556666", PID: 7, Name: "api\x1b[2J", Status: "busy",
		Verdict: "live", Addressable: true, SocketPath: "/run/cc/7.sock", Endpoint: "cc-peer:v1:7:api%1B[2J:/run/cc/7.sock", StartedAt: "2026-12-06T10:00:00Z"}
	join("alpha", wire.Listing{Sessions: []wire.Session{ok, bad}, Partial: true, Notes: []string{"warning: qwen-code: \x1b[31mnot read"}})
	join("gamma", wire.Listing{})
	leave("gamma")

	viaService := beta.env(t)
	direct := append(beta.env(t), "PEERCTL_SERVE=off")
	run := func(env []string, args ...string) result {
		return runPeerctl(t, runOpts{Env: env, Timeout: 2 * time.Minute}, args...)
	}
	eventually(t, time.Minute, "the service's view to hold alpha and beta", func() bool {
		r := run(viaService, "list", "--fleet", "--json")
		return strings.Contains(string(r.Stdout), `"host": "nats:alpha"`) && strings.Contains(string(r.Stdout), `"host": "nats:beta"`)
	})
	for _, args := range [][]string{{"list", "--fleet", "--json"}, {"list", "--fleet", "--wide"}, {"list", "--fleet", "--json", "--harness", "qwen-code"}} {
		a, b := run(viaService, args...), run(direct, args...)
		assert.Equal(t, string(b.Stdout), string(a.Stdout), "%q: the service's answer is the bus's document", args)
		assert.Equal(t, string(b.Stderr), string(a.Stderr), "%q", args)
		assert.Equal(t, b.Code, a.Code, "%q", args)
	}
	r := run(viaService, "list", "--fleet", "--json")
	assert.Equal(t, wire.ExitError, r.Code, "alpha's listing is partial: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), `peerctl: node alpha: warning: qwen-code: \x1b[31mnot read`)
	assert.Contains(t, string(r.Stderr), "session 00000009-1111-2222-3333-444455556666 left out")
	assert.NotContains(t, string(r.Stdout), "nats:gamma", "a node that left is not listed")

	// peerctl alone (no peerctl-mcp beside it or on PATH) lists the fleet
	// from the service: it does not start the bus client program.
	alone := filepath.Join(t.TempDir(), "peerctl")
	bin, err := os.ReadFile(peerctlBin(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, bin, 0o755))
	noMCP := func(env []string) []string {
		out := []string{"PATH=" + filepath.Dir(alone)}
		for _, e := range env {
			if !strings.HasPrefix(e, "PATH=") {
				out = append(out, e)
			}
		}
		return out
	}
	a := runPeerctl(t, runOpts{Env: noMCP(viaService), Bin: alone, Timeout: 2 * time.Minute}, "list", "--fleet", "--json")
	assert.Equal(t, string(r.Stdout), string(a.Stdout), "%s", a.Stderr)
	b := runPeerctl(t, runOpts{Env: noMCP(direct), Bin: alone, Timeout: 2 * time.Minute}, "list", "--fleet", "--json")
	assert.NotEqual(t, 0, b.Code)
	assert.Contains(t, string(b.Stderr), "peerctl-mcp", "without the service it needs the bus client program: %s", b.Stderr)
}
