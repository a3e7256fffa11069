package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
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

// durableWorld is a service's cli over a real outbox file, with no
// transport: svc is nil, so nothing can be handed over.
func durableWorld(t *testing.T) (*cli, *bytes.Buffer, *outbox.Store) {
	t.Helper()
	st, err := outbox.Open(context.Background(), filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var out bytes.Buffer
	c := newCLI(strings.NewReader(""), &out, &out, func(string) string { return "" })
	c.environ = func() []string { return nil }
	c.srv = &server{ob: app.NewOutbox(st, nil), store: st, inflight: map[int64]bool{}, wake: make(chan struct{}, 1)}
	return c, &out, st
}

// A TTL already over when the message comes to be tried gives a receipt
// that says expired (it gave nothing on stdout, exit 0).
func TestDurableSendExpiredAtOnceGivesAReceipt(t *testing.T) {
	c, out, _ := durableWorld(t)
	err := c.sendDurable(context.Background(), c.localWay(nil, app.SendRequest{Address: "reviewer", Text: "too late"}, true),
		"too late", durableFlags{ttl: time.Nanosecond}, true)
	require.NoError(t, err)
	var got wire.Receipt
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "%q", out.String())
	assert.Equal(t, "expired", got.Outcome)
	require.NotNil(t, got.Outbox)
	assert.Equal(t, "expired", got.Outbox.State)
	assert.Contains(t, got.Detail, "time to live passed")
}

// A repeated key answers with the first message as it stands: a message
// refused after its hand-over is "refused" (it was "queued", its receipt's
// word), with its id, state and target.
func TestDurableSendRepeatedKeyOfARefusedMessage(t *testing.T) {
	ctx := context.Background()
	c, out, st := durableWorld(t)
	m, _, err := c.srv.ob.Submit(ctx, nil, app.DurableRequest{Key: "k1", Address: "reviewer", Text: "hello", TTL: time.Hour})
	require.NoError(t, err)
	_, err = st.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxRefused, At: time.Now(),
		Outcome: "queued", Transport: "inbox", Reason: "delivery_failed: the harness refused it"})
	require.NoError(t, err)
	err = c.sendDurable(ctx, c.localWay(nil, app.SendRequest{Address: "reviewer", Text: "hello"}, true),
		"hello", durableFlags{ttl: time.Hour, key: "k1"}, true)
	require.NoError(t, err)
	var got wire.Receipt
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), "%q", out.String())
	assert.Equal(t, "refused", got.Outcome)
	require.NotNil(t, got.Outbox)
	assert.True(t, got.Outbox.Duplicate)
	assert.Equal(t, m.ID, got.Outbox.ID)
	assert.Equal(t, "refused", got.Outbox.State)
	assert.Equal(t, "reviewer", got.Outbox.Address)

	out.Reset()
	err = c.sendDurable(ctx, c.localWay(nil, app.SendRequest{Address: "reviewer", Text: "hello again"}, true),
		"hello again", durableFlags{ttl: time.Hour, key: "k1"}, true)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonKeyConflict, r.Reason)
	assert.Equal(t, wire.ExitKeyConflict, wire.ExitCode(r.Reason))
	assert.Empty(t, out.String())
}

// outbox show --json: a folded history line has its count and last time;
// a line of one has neither (fields only added).
func TestOutboxJSONHistoryCount(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	got := toOutboxJSON(ports.OutboxMessage{ID: 1, State: domain.OutboxStored, Tries: 6}, []ports.OutboxEvent{
		{At: t0, Last: t0, Count: 1, State: domain.OutboxStored},
		{At: t0, Last: t0.Add(62 * time.Second), Count: 6, State: domain.OutboxStored, Reason: "not_live: away"},
	})
	assert.Equal(t, 6, got.Tries)
	require.Len(t, got.History, 2)
	assert.Zero(t, got.History[0].Count)
	assert.Empty(t, got.History[0].LastAt)
	assert.Equal(t, 6, got.History[1].Count)
	assert.Equal(t, "2026-12-06T10:01:02Z", got.History[1].LastAt)
}
