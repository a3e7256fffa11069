//go:build unix

package acceptance

// The trust policy when peerctl serve and the command that hands it a
// message read different policy files (one started with another
// XDG_CONFIG_HOME): a hold decided where the message comes in is never
// weakened by the service's own reading; the stricter of the two stands.

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyHoldOfTheEntranceStandsOverTheServicesOwnFile(t *testing.T) {
	w := newServeWorld(t)
	w.startServe(t) // its own HOME and no XDG_CONFIG_HOME: no policy file, every send allowed
	w.more = append(w.more, "XDG_CONFIG_HOME="+t.TempDir())
	for _, from := range []string{"cli", "mcp"} {
		r := w.peerctl(t, nil, "policy", "add", "--from", from, "--to", "inbox", "hold")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}
	r := w.peerctl(t, nil, "policy", "check", "--from", "mcp", "--to", "inbox")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "hold by rule 2")
	pid := w.servePID(t)
	require.NotZero(t, pid)

	// The command line.
	cli := w.sendHeld(t, "held via cli")
	assert.Equal(t, "awaiting_approval", cli.Outcome)
	assert.Equal(t, "awaiting_approval", cli.Outbox.State)
	assert.Equal(t, "rule 1: hold from=cli to=inbox", cli.Outbox.Rule)

	// MCP.
	p := startMCP(t, w.env(t), "--config-dir", w.config, "mcp", "--confirm-timeout", "300ms")
	text, isErr := p.call(t, "send_message", map[string]any{"to": "inbox", "text": "held via mcp"})
	require.False(t, isErr, text)
	var viaMCP heldReceipt
	require.NoError(t, json.Unmarshal([]byte(text), &viaMCP), text)
	assert.Equal(t, "awaiting_approval", viaMCP.Outcome, text)
	assert.Equal(t, "rule 2: hold from=mcp to=inbox", viaMCP.Outbox.Rule)
	assert.Contains(t, text, "stricter than peerctl serve's own (allow by default rule 2", "the receipt says why")

	assert.Equal(t, pid, w.servePID(t), "the service started with the other folder kept them")
	assert.Empty(t, w.listener.Frames(), "nothing reached the target")
	m := w.show(t, cli.Outbox.ID)
	assert.Equal(t, "awaiting_approval", m.State)
	assert.Contains(t, m.Reason, "hold by rule 1 (hold from=cli to=inbox)")
	assert.Contains(t, m.Reason, "stricter than peerctl serve's own (allow by default rule 2 (allow from=* to=*))")

	// A person's approval passes the hold, as for any held message.
	r = w.peerctl(t, nil, "outbox", "approve", strconv.FormatInt(viaMCP.Outbox.ID, 10))
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	eventually(t, 60*time.Second, "the approved message to be delivered", func() bool { return w.show(t, viaMCP.Outbox.ID).State == "delivered" })
	require.Len(t, w.listener.Wait(1), 1)
	assert.Equal(t, "awaiting_approval", w.show(t, cli.Outbox.ID).State, "the other still waits")
}
