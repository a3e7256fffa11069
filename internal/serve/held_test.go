package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// A message a session held is followed by the service: once the session
// released it (its transcript shows the text) it is delivered, not left
// held for good.
func TestServiceFollowsAHeldMessageUntilReleased(t *testing.T) {
	ctx := t.Context()
	st, err := outbox.Open(ctx, filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{t: time.Now()}
	s := newServer(ctx, Options{})
	s.store, s.ob, s.now = st, app.NewOutbox(st, c.now), c.now

	transcript := filepath.Join(t.TempDir(), "session.jsonl")
	require.NoError(t, os.WriteFile(transcript, nil, 0o600))
	const text = "held while you started"
	order, err := storedOrder(wire.SendOrder{Query: wire.SendQuery{Address: "rev2", Text: text}, Durable: time.Hour})
	require.NoError(t, err)
	m, _, err := st.Put(ctx, ports.OutboxMessage{Address: "rev2", Text: text, Request: order, Created: c.now(), Expires: c.now().Add(time.Hour), NextAt: c.now()})
	require.NoError(t, err)
	at := time.Now()
	_, err = st.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering,
		At: at, Attempt: true, SessionID: "sess-1", Transcript: transcript})
	require.NoError(t, err)
	_, err = st.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivering}, ports.OutboxChange{State: domain.OutboxHeld, At: at, Outcome: "held"})
	require.NoError(t, err)

	s.pass()
	s.jobs.Wait()
	got, _, err := st.Get(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, domain.OutboxHeld, got.State, "not released yet")

	line, err := json.Marshal(map[string]any{"type": "queue-operation", "operation": "enqueue",
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "sessionId": "sess-1", "content": text})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(transcript, append(line, '\n'), 0o600))
	s.pass() // looked at a moment ago: not yet
	s.jobs.Wait()
	got, _, err = st.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxHeld, got.State, "at most one look per heldEvery")

	c.add(heldEvery)
	s.pass()
	s.jobs.Wait()
	got, _, err = st.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, got.State)
	assert.Contains(t, got.Reason, "the session released it")
}
