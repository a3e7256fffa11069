//go:build unix

package acceptance

// A command given --host nats:NODE on a machine whose service is on the
// bus is carried by that service (its "bus" op, docs/SERVE.md): no
// peerctl-mcp starts, no connection is made, and the command still reads
// the node's answer itself; the service ending mid-request is
// outcome_unknown, never a retry.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// alone is a copy of peerctl in a folder of its own: no peerctl-mcp
// beside it, none on the PATH its runs get (/usr/bin:/bin), so a command
// that would start peerctl-mcp fails saying it is missing.
func alone(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(peerctlBin(t))
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "peerctl")
	require.NoError(t, os.WriteFile(p, b, 0o755))
	return p
}

// withPath is env with PATH set to path.
func withPath(env []string, path string) []string {
	out := []string{"PATH=" + path}
	for _, kv := range env {
		if len(kv) < 5 || kv[:5] != "PATH=" {
			out = append(out, kv)
		}
	}
	return out
}

// serviceOnBus waits for w's service to say it is on the bus.
func serviceOnBus(t *testing.T, w serveWorld) {
	t.Helper()
	eventually(t, 2*time.Minute, "the service to be on the bus", func() bool {
		r := runPeerctl(t, runOpts{Env: w.env(t)}, "serve", "status", "--json")
		var st struct {
			Bus *struct {
				Node  string `json:"node"`
				OnBus bool   `json:"onBus"`
			} `json:"bus"`
		}
		return r.Code == 0 && json.Unmarshal(r.Stdout, &st) == nil && st.Bus != nil && st.Bus.OnBus
	})
}

func TestFleetSendCarriedByTheSendersService(t *testing.T) {
	peerctlWithMCP(t) // the services run in peerctl-mcp (serve with a bus)
	url := natstest.Start(t)
	beta := newServeWorld(t)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	beta.startServe(t)
	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	serviceOnBus(t, beta)

	alpha := newServeWorld(t)
	alpha.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "XDG_CONFIG_HOME=" + t.TempDir()}
	alpha.startServe(t)
	serviceOnBus(t, alpha)
	// alpha's commands: a peerctl with no peerctl-mcp to start.
	lone := alone(t)
	env := withPath(alpha.env(t), "/usr/bin:/bin")
	run := func(args ...string) result {
		return runPeerctl(t, runOpts{Env: env, Bin: lone, Timeout: 2 * time.Minute}, args...)
	}

	r := run("list", "--host", "nats:beta", "--harness", "claude-code", "--json")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	var listed []wire.Session
	require.NoError(t, json.Unmarshal(r.Stdout, &listed), "%s", r.Stdout)
	require.Len(t, listed, 1)
	assert.Equal(t, "nats:beta", listed[0].Host)

	r = run("send", "--host", "nats:beta", "--json", "inbox", "carried by alpha's service")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	var receipt wire.Receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &receipt), "%s", r.Stdout)
	assert.True(t, receipt.OK)
	assert.Equal(t, "nats:beta", receipt.Host)
	assert.Equal(t, listed[0].Endpoint, receipt.Endpoint)
	assert.Equal(t, listed[0].SessionID, receipt.SessionID)
	assert.True(t, beta.courierStarted(t), "beta's courier delivered it")

	// Without the service, the same peerctl needs peerctl-mcp: the run
	// above did not start it.
	r = runPeerctl(t, runOpts{Env: append(env, "PEERCTL_SERVE=off"), Bin: lone}, "send", "--host", "nats:beta", "inbox", "not carried")
	assert.NotEqual(t, 0, r.Code)
	assert.Contains(t, string(r.Stderr), "peerctl-mcp", "%s", r.Stderr)

	// A node with no service: nothing was sent.
	r = run("send", "--host", "nats:gone", "inbox", "hello")
	assert.Equal(t, wire.ExitHostUnreachable, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "node gone has no service on the fleet's bus")
}

func TestFleetSendCarriedServiceDiesMidRequest(t *testing.T) {
	peerctlWithMCP(t)
	url := natstest.Start(t)
	// Node "slow" takes alpha's request and never answers.
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	got := make(chan *nats.Msg, 1)
	_, err = nc.ChanSubscribe("peerctl.v1.req.slow.alpha", got)
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	alpha := newServeWorld(t)
	alpha.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "XDG_CONFIG_HOME=" + t.TempDir()}
	alpha.startServe(t)
	serviceOnBus(t, alpha)
	env := withPath(alpha.env(t), "/usr/bin:/bin")
	done := make(chan result, 1)
	go func() {
		done <- runPeerctl(t, runOpts{Env: env, Bin: alone(t), Timeout: 3 * time.Minute}, "send", "--host", "nats:slow", "--json", "inbox", "lost with the service")
	}()
	var m *nats.Msg
	select {
	case m = <-got:
	case <-time.After(2 * time.Minute):
		require.FailNow(t, "the request did not reach node slow")
	}
	assert.Contains(t, string(m.Data), `"op":"send"`)
	alpha.stopServe(t, 9) // SIGKILL: the service dies with the request
	r := <-done
	assert.Equal(t, wire.ExitOutcomeUnknown, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stdout), `"outcome_unknown"`)
	assert.Contains(t, string(r.Stdout), "peerctl show --host nats:slow", "it says where to look")
	select {
	case m := <-got:
		assert.Fail(t, "the request was sent again", "%s", m.Data)
	default:
	}
}
