package acceptance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// The outbox's store (SQLite) is linked into peerctl-mcp only, and
// peerctl runs the commands that need it there: with no outbox file the
// outbox commands answer from peerctl alone (an empty outbox), as before;
// with one, peerctl runs them as the peerctl-mcp beside it and the answer
// is the store's; serve always runs there. Without a peerctl-mcp, a
// command that needs the store says how to get one and exits 1.
func TestTheOutboxCommandsRunAsPeerctlMCP(t *testing.T) {
	both := peerctlBin(t) // peerctl-mcp beside it
	b, err := os.ReadFile(both)
	require.NoError(t, err)
	alone := filepath.Join(t.TempDir(), "peerctl")
	require.NoError(t, os.WriteFile(alone, b, 0o755))
	state, run := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state, "XDG_RUNTIME_DIR=" + run}

	for _, bin := range []string{alone, both} {
		r := runPeerctl(t, runOpts{Bin: bin, Env: env}, "outbox", "--json")
		assert.Equal(t, 0, r.Code, "no outbox yet: stderr %s", r.Stderr)
		assert.JSONEq(t, `[]`, string(r.Stdout))
		r = runPeerctl(t, runOpts{Bin: bin, Env: env}, "outbox", "show", "1")
		assert.Equal(t, 15, r.Code, "stderr %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "message 1 is not in the outbox")
	}
	r := runPeerctl(t, runOpts{Bin: alone, Env: env}, "serve", "--idle-exit=1s")
	assert.Equal(t, 1, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl serve runs peerctl-mcp")
	assert.Contains(t, string(r.Stderr), "make build")
	// A durable send starts the service as peerctl-mcp: without one it
	// says so at once, not after waiting for a service that cannot start.
	r = runPeerctl(t, runOpts{Bin: alone, Env: env}, "send", "--durable", "reviewer", "hi")
	assert.Equal(t, 13, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl serve runs peerctl-mcp")
	assert.Contains(t, string(r.Stderr), "nothing was stored")
	assert.NoFileExists(t, filepath.Join(state, "peerctl", "serve.log"), "no service was started")

	st, err := outbox.Open(context.Background(), filepath.Join(state, "peerctl", outbox.FileName))
	require.NoError(t, err)
	now := time.Now()
	_, _, err = st.Put(context.Background(), ports.OutboxMessage{Address: "reviewer", Text: "hi", State: domain.OutboxStored, Created: now, Expires: now.Add(time.Hour), NextAt: now, Updated: now})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	r = runPeerctl(t, runOpts{Bin: both, Env: env}, "outbox", "show", "1", "--json")
	require.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
	var m struct{ Address, Text, State string }
	require.NoError(t, json.Unmarshal(r.Stdout, &m), "%s", r.Stdout)
	assert.Equal(t, "reviewer", m.Address)
	assert.Equal(t, "stored", m.State)
	for _, args := range [][]string{{"outbox"}, {"outbox", "show", "1"}, {"serve", "status"}} {
		r = runPeerctl(t, runOpts{Bin: alone, Env: env}, args...)
		assert.Equal(t, 1, r.Code, "%q: stderr %s", args, r.Stderr)
		assert.Contains(t, string(r.Stderr), "runs peerctl-mcp", "%q", args)
		assert.Empty(t, r.Stdout, "%q", args)
	}
}
