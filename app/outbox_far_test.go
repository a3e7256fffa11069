package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// forBeta is a durable message stored for node beta of the bus.
func forBeta(t *testing.T, w *outboxWorld) ports.OutboxMessage {
	t.Helper()
	m, _, err := w.ob.Submit(context.Background(), nil, app.DurableRequest{Key: "k", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
	require.NoError(t, err)
	return m
}

// A message for a node of the bus is posted once: a bus that does not
// take it stores it again after the backoff; posted, it waits stored
// until its expiry, never posted again.
func TestOutboxForwardPostsOnceAndBacksOff(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m := forBeta(t, w)
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
	m, err := w.ob.Forward(ctx, m, "nats:beta", post)
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
	m := forBeta(t, w)
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

// outbox retry of a message for a node of the bus: one still waiting
// there is not retried (it says where it waits); one that ended there is
// posted again, numbered, and the node's changes after the retry are
// recorded here even in the same words as before it.
func TestOutboxRetryOfABusMessagePostsItAgain(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m := forBeta(t, w)
	posts := 0
	post := func(context.Context, time.Duration) error { posts++; return nil }
	m, err := w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	require.Equal(t, 1, posts)

	_, err = w.ob.Retry(ctx, nil, m.ID, true)
	require.ErrorIs(t, err, app.ErrWaiting, "posted and not finished: it waits there")
	assert.Contains(t, err.Error(), "waits for node beta (on the fleet's bus, in node beta's mail")
	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, 1, posts, "not posted again")

	heard := func(far app.FarState) ports.OutboxMessage {
		t.Helper()
		got, hist := w.state(t, m.ID)
		got, err := w.ob.Heard(ctx, got, hist, "nats:beta", far)
		require.NoError(t, err)
		return got
	}
	t1 := w.now
	refused := app.FarEvent{At: t1.Add(time.Second), State: domain.OutboxRefused, Reason: "not_allowed: rule 2 denies it"}
	far := app.FarState{ID: 7, History: []app.FarEvent{{At: t1, State: domain.OutboxStored}, refused}}
	m = heard(far)
	require.Equal(t, domain.OutboxRefused, m.State)

	w.now = t1.Add(time.Minute)
	m, err = w.ob.Retry(ctx, nil, m.ID, false)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, 1, m.Retries)
	assert.Empty(t, m.Transport, "the last post no longer stands")
	assert.Contains(t, m.Reason, "posted to node beta again (its retry 1)")
	m = heard(far) // the node's receipt from before the retry, late
	assert.Equal(t, domain.OutboxStored, m.State, "an old receipt changes nothing")
	assert.True(t, m.NextAt.Equal(w.now), "still due: not posted yet")
	m, err = w.ob.Forward(ctx, m, "nats:beta", post)
	require.NoError(t, err)
	assert.Equal(t, 2, posts, "posted again")
	assert.Equal(t, app.BusTransport, m.Transport)

	// The node retried it (RetryFrom) and it was refused again, in the
	// same words: a new change.
	far.History = append(far.History, app.FarEvent{At: t1.Add(time.Minute + time.Second), State: domain.OutboxStored, Reason: "retried by node alpha's outbox retry 1"},
		app.FarEvent{At: t1.Add(time.Minute + 2*time.Second), State: domain.OutboxRefused, Reason: refused.Reason})
	m = heard(far)
	assert.Equal(t, domain.OutboxRefused, m.State)
	_, hist := w.state(t, m.ID)
	assert.Equal(t, "on nats:beta (message 7 there): not_allowed: rule 2 denies it", hist[len(hist)-1].Reason)

	// outcome_unknown there: confirmed only, then posted again for the
	// node to look at its transcript first.
	far.History = append(far.History, app.FarEvent{At: t1.Add(2 * time.Minute), State: domain.OutboxOutcomeUnknown, Reason: "the service stopped"})
	m = heard(far)
	require.Equal(t, domain.OutboxOutcomeUnknown, m.State)
	_, err = w.ob.Retry(ctx, nil, m.ID, false)
	require.ErrorIs(t, err, app.ErrUnconfirmed)
	m, err = w.ob.Retry(ctx, nil, m.ID, true)
	require.NoError(t, err)
	assert.Equal(t, 2, m.Retries)
	assert.Contains(t, m.Reason, "looking at its transcript first")
}

// The node applies its sender's retry once per number: a replay changes
// nothing; a message that cannot be retried there keeps its state with a
// line saying so (its receipt tells the sender).
func TestOutboxRetryFromAppliesEachRetryOnce(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "nats:alpha:k", Address: "api", Text: "hi", TTL: time.Hour,
		Sender: domain.NewSender(domain.EntranceNode, "alpha")})
	require.NoError(t, err)
	m, err = w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxRefused, At: w.now, Reason: "not_live"})
	require.NoError(t, err)

	w.now = w.now.Add(time.Second)
	m, err = w.ob.RetryFrom(ctx, nil, m.ID, "alpha", 1)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, 1, m.Retries)
	assert.Equal(t, "retried by node alpha's outbox retry 1", m.Reason)
	assert.True(t, m.NextAt.Equal(w.now), "due now")

	m, err = w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxRefused, At: w.now, Reason: "not_live"})
	require.NoError(t, err)
	m, err = w.ob.RetryFrom(ctx, nil, m.ID, "alpha", 1)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxRefused, m.State, "the same retry again is a replay")

	// A retry here does not count: the count is its sender's.
	m, err = w.ob.Retry(ctx, nil, m.ID, false)
	require.NoError(t, err)
	assert.Equal(t, 1, m.Retries)

	m, err = w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivered, At: w.now, Reason: "the harness took it"})
	require.NoError(t, err)
	m, err = w.ob.RetryFrom(ctx, nil, m.ID, "alpha", 2)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, 2, m.Retries)
	assert.Equal(t, "node alpha's outbox retry 2: it is delivered here, so it is not sent again", m.Reason)
}

// The sender's copy never leaves a final state but along the chain's own
// steps: expired or cancelled here is never delivered after, delivered is
// never refused; delivered → taken up → replied is followed.
func TestOutboxHeardNeverLeavesAFinalStateButAlongTheChain(t *testing.T) {
	ctx := context.Background()
	at := time.Now().Add(2 * time.Hour) // past the messages' deadline
	for _, tc := range []struct {
		name    string
		first   domain.OutboxState // where the sender's copy stands
		far     []domain.OutboxState
		want    domain.OutboxState
		changes int // far changes recorded
	}{
		{"expired here, delivered there", domain.OutboxExpired, []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivered}, domain.OutboxExpired, 0},
		{"cancelled here, delivered there", domain.OutboxCancelled, []domain.OutboxState{domain.OutboxDelivered, domain.OutboxTakenUp}, domain.OutboxCancelled, 0},
		{"delivered, then refused", domain.OutboxDelivered, []domain.OutboxState{domain.OutboxRefused}, domain.OutboxDelivered, 0},
		{"delivered, then taken up and replied", domain.OutboxDelivered, []domain.OutboxState{domain.OutboxTakenUp, domain.OutboxReplied}, domain.OutboxReplied, 2},
		{"stored, the chain in order", domain.OutboxStored, []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivered}, domain.OutboxDelivered, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newOutboxWorld(t)
			m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "k", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
			require.NoError(t, err)
			if tc.first != domain.OutboxStored {
				m, err = w.store.Move(ctx, m.ID, domain.OutboxStates(), ports.OutboxChange{State: tc.first, At: at, Reason: "here"})
				require.NoError(t, err)
			}
			far := app.FarState{ID: 7}
			for i, s := range tc.far {
				far.History = append(far.History, app.FarEvent{At: at, State: s, Reason: fmt.Sprintf("step %d", i)})
			}
			_, hist := w.state(t, m.ID)
			got, err := w.ob.Heard(ctx, m, hist, "nats:beta", far)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.State)
			_, after := w.state(t, m.ID)
			assert.Len(t, after, len(hist)+tc.changes)
		})
	}
}

// A receipt of mail never stored there (id 0: a repeat the node refused)
// is not the one the sender's copy was told of.
func TestOutboxHeardTakesNoReceiptForAnotherMessageThere(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	at := w.now
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "k1", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
	require.NoError(t, err)
	got, hist := w.state(t, m.ID)
	_, err = w.ob.Heard(ctx, got, hist, "nats:beta", app.FarState{ID: 7, History: []app.FarEvent{{At: at, State: domain.OutboxStored}}})
	require.NoError(t, err)
	got, hist = w.state(t, m.ID)
	got, err = w.ob.Heard(ctx, got, hist, "nats:beta", app.FarState{History: []app.FarEvent{{At: at, State: domain.OutboxRefused, Reason: "key_conflict"}}})
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, got.State, "a refusal of mail never stored there is not message 7's")
	assert.True(t, app.FarMove(domain.OutboxStored, domain.OutboxStored, false, true))
	assert.False(t, app.FarMove(domain.OutboxDelivered, domain.OutboxStored, false, true))
	assert.True(t, app.FarMove(domain.OutboxRefused, domain.OutboxStored, true, false), "the node's own retry of its refusal")
	assert.True(t, app.FarMove(domain.OutboxExpired, domain.OutboxDelivered, false, true), "delivered there by the deadline, its receipt late")
	assert.False(t, app.FarMove(domain.OutboxExpired, domain.OutboxDelivered, false, false))
	assert.False(t, app.FarMove(domain.OutboxCancelled, domain.OutboxDelivered, false, true))
}

// A message already on the bus is its node's to take back: cancel
// refuses it, saying how, and leaves it stored (its receipts decide);
// one not posted yet is cancelled here.
func TestOutboxCancelOfAMessageOnTheBusIsRefused(t *testing.T) {
	w := newOutboxWorld(t)
	ctx := context.Background()
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "c1", Address: "api", Host: "nats:beta", Text: "hi", TTL: time.Hour})
	require.NoError(t, err)
	m, err = w.ob.Forward(ctx, m, "nats:beta", func(context.Context, time.Duration) error { return nil })
	require.NoError(t, err)
	require.Equal(t, app.BusTransport, m.Transport)
	got, err := w.ob.Cancel(ctx, m.ID, "cancelled by outbox cancel")
	require.ErrorIs(t, err, app.ErrOnTheBus)
	assert.Contains(t, err.Error(), "on node beta run `peerctl outbox`")
	assert.Contains(t, err.Error(), `"c1"`)
	assert.Equal(t, domain.OutboxStored, got.State)
	got, _ = w.state(t, m.ID)
	assert.Equal(t, domain.OutboxStored, got.State)

	n, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "c2", Address: "api", Host: "nats:beta", Text: "not yet", TTL: time.Hour})
	require.NoError(t, err)
	n, err = w.ob.Cancel(ctx, n.ID, "cancelled by outbox cancel")
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxCancelled, n.State)
}
