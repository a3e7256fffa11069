package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// A message for a node of the bus is posted once: a bus that does not
// take it stores it again after the backoff; posted, it waits stored
// until its expiry, never posted again.
func TestOutboxForwardPostsOnceAndBacksOff(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "k", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
	require.NoError(t, err)
	posts := 0
	var ttl time.Duration
	post := func(_ context.Context, d time.Duration) error {
		posts++
		ttl = d
		if posts == 1 {
			return errors.New("no NATS server answered")
		}
		return nil
	}
	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.True(t, w.now.Add(domain.Backoff(1, app.MaxBackoff)).Equal(m.NextAt), "due after the backoff")
	assert.Contains(t, m.Reason, "the fleet's bus did not take it")

	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, 2, posts)
	assert.Equal(t, time.Hour, ttl)
	assert.Equal(t, app.BusTransport, m.Transport)
	assert.True(t, m.Expires.Equal(m.NextAt), "due at its expiry only")
	assert.Contains(t, m.Reason, "in node beta's mail")

	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, 2, posts, "never posted twice")
	w.now = m.Expires
	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxExpired, m.State)
}

// The node's receipts become the message's chain here, each change once,
// in order; a late "stored" never takes a delivered message back.
func TestOutboxHeardRecordsTheFarChain(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "k", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
	require.NoError(t, err)
	at := w.now
	stored := app.FarEvent{At: at, State: domain.OutboxStored}
	far := app.FarState{ID: 7, History: []app.FarEvent{stored}}
	apply := func(far app.FarState) {
		t.Helper()
		got, hist := w.state(t, m.ID)
		_, err := w.ob.Heard(ctx, got, hist, "nats:beta", far)
		require.NoError(t, err)
	}
	apply(far)
	apply(far) // twice: once
	far.History = append(far.History, app.FarEvent{At: at, State: domain.OutboxDelivering}, app.FarEvent{At: at, State: domain.OutboxDelivered, Reason: "the harness took it"})
	far.Outcome, far.MsgID = "delivered", "msg-3"
	apply(far)
	apply(app.FarState{ID: 7, History: []app.FarEvent{stored, {At: at, State: domain.OutboxAwaitingApproval, Reason: "held"}}})
	got, hist := w.state(t, m.ID)
	assert.Equal(t, domain.OutboxDelivered, got.State)
	assert.Equal(t, "msg-3", got.MsgID)
	var chain []string
	for _, h := range hist {
		chain = append(chain, h.State.String()+" "+h.Reason)
	}
	assert.Equal(t, []string{"stored ", "stored on nats:beta (message 7 there): stored", "delivered on nats:beta (message 7 there): the harness took it"}, chain)
}
