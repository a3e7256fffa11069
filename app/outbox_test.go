package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// countingTransport hands every message over (the fake session's enqueue
// line is written, as Claude Code would) and counts the hand-overs per text.
type countingTransport struct {
	mu    sync.Mutex
	count map[string]int
	fake  func() *fakeSession
	fail  error
	// queueOnly writes the enqueue line only: the session never takes it up.
	queueOnly bool
}

func (c *countingTransport) Name() string { return "fake" }

func (c *countingTransport) Deliver(_ context.Context, _ domain.Session, m domain.Message) (domain.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return domain.Receipt{}, c.fail
	}
	if c.count == nil {
		c.count = map[string]int{}
	}
	c.count[m.Text()]++
	if f := c.fake(); f != nil && c.queueOnly {
		f.queue(m.Text(), time.Now())
	} else if f != nil {
		f.enqueue(m.Text(), time.Now())
	}
	return domain.Receipt{Transport: "fake", Outcome: "queued", MsgID: "msg-1"}, nil
}

func (c *countingTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{}, nil
}

func (c *countingTransport) sent(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count[text]
}

type outboxWorld struct {
	dir   string
	store *outbox.Store
	ob    *app.Outbox
	now   time.Time
	tr    *countingTransport
	svc   *app.Service
	fake  *fakeSession
}

func newOutboxWorld(t *testing.T) *outboxWorld {
	dir := t.TempDir()
	store, err := outbox.Open(context.Background(), filepath.Join(dir, "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	w := &outboxWorld{dir: dir, store: store, now: time.Now()}
	w.ob = app.NewOutbox(store, func() time.Time { return w.now })
	w.tr = &countingTransport{fake: func() *fakeSession { return w.fake }}
	w.svc = newService(dir, w.tr, variants()[1])
	return w
}

func (w *outboxWorld) submit(t *testing.T, key, address, text string) ports.OutboxMessage {
	m, _, err := w.ob.Submit(context.Background(), nil, app.DurableRequest{Key: key, Address: address, Text: text, TTL: time.Hour})
	require.NoError(t, err)
	return m
}

func (w *outboxWorld) state(t *testing.T, id int64) (ports.OutboxMessage, []ports.OutboxEvent) {
	m, h, err := w.store.Get(context.Background(), id)
	require.NoError(t, err)
	return m, h
}

// pendingOnly selects the messages the service still works on.
var pendingOnly = ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}}

var confirmFast = app.SendRequest{ConfirmOptions: app.ConfirmOptions{ConfirmTimeout: 2 * time.Second}}

func TestOutboxStoresUntilTheSessionIsBackThenDeliversOnce(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "reviewer", "look at PR 7 when you are back")
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Contains(t, m.Reason, "not_live")
	assert.NotContains(t, m.Reason, "peerctl list shows", "a message that waits for its session is not told where to look now: %s", m.Reason)
	assert.NotContains(t, m.Reason, "transcript may still exist", m.Reason)
	assert.Equal(t, w.now.Add(2*time.Second).UnixNano(), m.NextAt.UnixNano(), "backoff after the first failure")
	assert.Zero(t, w.tr.sent(m.Text))

	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.now = w.now.Add(3 * time.Second)
	m, res, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, idA, m.SessionID)
	assert.Equal(t, "msg-1", m.MsgID)
	assert.Equal(t, w.fake.Transcript(), m.Transcript)
	assert.True(t, res.Confirmed)
	assert.Equal(t, 1, w.tr.sent(m.Text))
	_, hist := w.state(t, m.ID)
	var states []string
	for _, e := range hist {
		states = append(states, e.State.String())
	}
	assert.Equal(t, []string{"stored", "stored", "delivering", "delivered"}, states)
	// A delivered message is not due again.
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Empty(t, due)
}

func TestOutboxWaitsForASessionThatHasJustStartedToSettle(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "reviewer", "look at PR 8 once you are up")
	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.fake.unsettle() // its record just appeared: Claude Code would hold the message
	m, res, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err, "nothing was sent, nothing failed")
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, idA, res.Target.ID())
	assert.Contains(t, m.Reason, "has just started and not settled")
	assert.Equal(t, w.now.Add(2*time.Second).UnixNano(), m.NextAt.UnixNano(), "looked at again shortly")
	assert.Zero(t, m.Tries, "a look at a starting session is no try")
	assert.Zero(t, w.tr.sent(m.Text), "nothing handed to a starting session")

	// The same rule for a send that asks for a settled target (a durable
	// message's attempt on another machine, which that machine's peerctl
	// runs): refused, nothing sent, the refusal one that may pass.
	asked := confirmFast
	asked.Address, asked.Text, asked.Settled = "reviewer", m.Text, true
	_, err = w.svc.Send(ctx, asked)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotAddressable, r.Reason)
	assert.True(t, domain.Retryable(r.Reason))
	assert.Equal(t, m.Reason, r.Detail, "one rule, in the same words")
	assert.Zero(t, w.tr.sent(m.Text), "nothing handed to a starting session")

	w.fake.setStatus("idle") // it has settled
	w.now = w.now.Add(3 * time.Second)
	m, res, err = w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.True(t, res.Confirmed)
	assert.Equal(t, 1, w.tr.sent(m.Text))
}

func TestOutboxHandsOverToARecordThatNeverShowsAStatus(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "reviewer", "no status for ever")
	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.fake.unsettle()
	w.now = time.Now().Add(domain.SettleLimit + time.Second) // started longer ago than any settling
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, 1, w.tr.sent(m.Text))
}

// A held message is delivered once the session released it (its
// transcript shows the text), not left held for good; it is never sent
// again.
func TestOutboxHeldIsDeliveredOnceReleased(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	m := w.submit(t, "", "reviewer", "held while you started")
	at := time.Now()
	m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering,
		At: at, Attempt: true, SessionID: idA, Transcript: w.fake.Transcript()})
	require.NoError(t, err)
	m, err = w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivering}, ports.OutboxChange{State: domain.OutboxHeld,
		At: at, Outcome: domain.OutcomeHeld.String(), Reason: "the session holds it"})
	require.NoError(t, err)

	w.fake.enqueue("some other message", at.Add(10*time.Millisecond))
	got, released, err := w.ob.Released(ctx, w.svc, m)
	require.NoError(t, err)
	assert.False(t, released, "not released yet")
	assert.Equal(t, domain.OutboxHeld, got.State)

	w.fake.enqueue(m.Text, at.Add(20*time.Millisecond)) // the session released it
	got, released, err = w.ob.Released(ctx, w.svc, m)
	require.NoError(t, err)
	assert.True(t, released)
	assert.Equal(t, domain.OutboxDelivered, got.State)
	assert.Equal(t, "delivered", got.Outcome)
	assert.Contains(t, got.Reason, "the session released it: the transcript shows it arrived")
	assert.Zero(t, w.tr.sent(m.Text), "never sent again")
}

func TestOutboxSameKeyIsOneMessage(t *testing.T) {
	w := newOutboxWorld(t)
	a := w.submit(t, "nightly-42", "reviewer", "first")
	b, created, err := w.ob.Submit(context.Background(), nil, app.DurableRequest{Key: "nightly-42", Address: "reviewer", Text: "first"})
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, a.ID, b.ID)
}

// The same key with another target or text is refused (key_conflict),
// naming the first message; nothing is stored and the first is as it was.
func TestOutboxSameKeyOtherTargetOrTextIsAConflict(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	a := w.submit(t, "nightly-42", "reviewer", "first")
	for _, tc := range []struct {
		name string
		req  app.DurableRequest
		says string
	}{
		{"text", app.DurableRequest{Address: "reviewer", Text: "second"}, "its text differs"},
		{"address", app.DurableRequest{Address: "builder", Text: "first"}, `its target is "reviewer", not "builder"`},
		{"host", app.DurableRequest{Address: "reviewer", Host: "far", Text: "first"}, `not "far: reviewer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Key = "nightly-42"
			got, created, err := w.ob.Submit(ctx, nil, tc.req)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonKeyConflict, r.Reason)
			assert.Contains(t, r.Detail, tc.says)
			assert.Contains(t, r.Detail, fmt.Sprintf("message %d (stored)", a.ID))
			assert.False(t, created)
			assert.Equal(t, a.ID, got.ID)
		})
	}
	all, err := w.store.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "first", all[0].Text)
}

// A receipt's outcome word for a message as it stands: stored while it
// waits, the receipt's word once handed over, else its state, even when a
// refusal after the hand-over left a receipt's word behind.
func TestDurableOutcome(t *testing.T) {
	for _, tc := range []struct {
		state   domain.OutboxState
		outcome string
		want    string
	}{
		{domain.OutboxStored, "", "stored"},
		{domain.OutboxDelivering, "", "stored"},
		{domain.OutboxDelivered, "queued", "queued"},
		{domain.OutboxHeld, "held", "held"},
		{domain.OutboxTakenUp, "", "taken_up"},
		{domain.OutboxRefused, "queued", "refused"},
		{domain.OutboxOutcomeUnknown, "queued", "outcome_unknown"},
		{domain.OutboxExpired, "", "expired"},
		{domain.OutboxCancelled, "", "cancelled"},
	} {
		assert.Equal(t, tc.want, app.DurableOutcome(ports.OutboxMessage{State: tc.state, Outcome: tc.outcome}), "%s/%s", tc.state, tc.outcome)
	}
}

func TestOutboxRefusesAnInvalidTextBeforeStoring(t *testing.T) {
	w := newOutboxWorld(t)
	_, _, err := w.ob.Submit(context.Background(), nil, app.DurableRequest{Address: "x", Text: "  "})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok)
	assert.Equal(t, domain.ReasonInvalidMessage, r.Reason)
	l, err := w.store.List(context.Background(), ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Empty(t, l)
}

func TestOutboxExpiresWithTheLastReason(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "nobody-here", "hello")
	m, _, _ = w.ob.Attempt(ctx, w.svc, m, confirmFast)
	w.now = w.now.Add(2 * time.Hour)
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxExpired, m.State)
	assert.Contains(t, m.Reason, "time to live passed")
	assert.Contains(t, m.Reason, "not_live")
	// Retry renews the TTL and makes it due now.
	m, err = w.ob.Retry(ctx, w.svc, m.ID, true)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.True(t, m.Expires.After(w.now))
}

// Each retry of an expired message gives it the time to live it was sent
// with (an hour), counted from the retry: not the time from its creation
// to its last expiry, which grew by however long it lay expired.
func TestOutboxRetryRenewsTheTTLItWasSentWith(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "nobody-here", "hello")
	for range 3 {
		w.now = w.now.Add(5 * time.Hour)
		m, _, _ = w.ob.Attempt(ctx, w.svc, m, confirmFast)
		require.Equal(t, domain.OutboxExpired, m.State)
		var err error
		m, err = w.ob.Retry(ctx, w.svc, m.ID, true)
		require.NoError(t, err)
		assert.Equal(t, w.now.Add(time.Hour).UTC(), m.Expires, "an hour from the retry")
		assert.Equal(t, time.Hour, m.TTL)
	}
}

func TestOutboxOutcomeUnknownIsNeverRetriedOnItsOwn(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.tr.fail = domain.Refuse(domain.ReasonOutcomeUnknown, "the courier died after it had the text")
	m := w.submit(t, "", "reviewer", "maybe twice")
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.Error(t, err)
	assert.Equal(t, domain.OutboxOutcomeUnknown, m.State)
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Empty(t, due)
	_, err = w.ob.Cancel(ctx, m.ID, "x")
	assert.ErrorIs(t, err, app.ErrNotPending)
	m, err = w.ob.Retry(ctx, w.svc, m.ID, true)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
}

func TestOutboxDeliveryFailedBeforeHandOverIsRetried(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.tr.fail = domain.Refuse(domain.ReasonDeliveryFailed, "courier program missing")
	m := w.submit(t, "", "reviewer", "again later")
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.Error(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, 1, m.Attempts)
	assert.Contains(t, m.Reason, "courier program missing")
}

// Tries count every try, once, from the moment it began: a try that
// handed the message over is one of them (never "0 tries, 1 of them
// began a hand-over"), while it runs and after; a try that found no
// session is one that began none.
func TestOutboxTriesCountTheHandOver(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "reviewer", "no one there yet")
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.Error(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, [2]int{1, 0}, [2]int{m.Tries, m.Attempts}, "tries, hand-overs begun")

	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.now = w.now.Add(time.Minute)
	m, _, err = w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, [2]int{2, 1}, [2]int{m.Tries, m.Attempts}, "tries, hand-overs begun")
}

// A service killed mid-delivery leaves the message in delivering: the
// transcript decides, and nothing is sent by the check.
func TestOutboxRecoverChecksTheTranscript(t *testing.T) {
	ctx := context.Background()
	t.Run("arrived", func(t *testing.T) {
		w := newOutboxWorld(t)
		w.fake = startFake(t, w.dir, idA, "reviewer")
		m := w.submit(t, "", "reviewer", "arrived before the crash")
		m = w.crashMidDelivery(t, m, true)
		m, err := w.ob.Recover(ctx, w.svc, m)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxDelivered, m.State)
		assert.Contains(t, m.Reason, "transcript shows it arrived")
		assert.Zero(t, w.tr.sent(m.Text))
	})
	t.Run("not arrived", func(t *testing.T) {
		w := newOutboxWorld(t)
		w.fake = startFake(t, w.dir, idA, "reviewer")
		m := w.submit(t, "", "reviewer", "lost in the crash")
		m = w.crashMidDelivery(t, m, false)
		m, err := w.ob.Recover(ctx, w.svc, m)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxStored, m.State)
		m, _, err = w.ob.Attempt(ctx, w.svc, m, confirmFast)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxDelivered, m.State)
		assert.Equal(t, 1, w.tr.sent(m.Text))
	})
	// A transcript that is gone or cannot be read after the restart is no
	// proof that nothing arrived: outcome_unknown, never re-sent on its own.
	for _, tc := range []struct {
		name  string
		spoil func(path string)
	}{
		{"transcript gone", func(path string) { require.NoError(t, os.Remove(path)) }},
		{"transcript unreadable", func(path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.Mkdir(path, 0o700)) // reading it fails, even as root
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newOutboxWorld(t)
			w.fake = startFake(t, w.dir, idA, "reviewer")
			m := w.submit(t, "", "reviewer", "was it there")
			m = w.crashMidDelivery(t, m, true)
			tc.spoil(w.fake.Transcript())
			m, err := w.ob.Recover(ctx, w.svc, m)
			require.NoError(t, err)
			assert.Equal(t, domain.OutboxOutcomeUnknown, m.State)
			assert.Contains(t, m.Reason, "transcript cannot be read")
			assert.Contains(t, m.Reason, "outbox retry")
			due, err := w.store.List(ctx, pendingOnly)
			require.NoError(t, err)
			assert.Empty(t, due, "it waits for a person")
		})
	}
	t.Run("cannot be checked", func(t *testing.T) {
		w := newOutboxWorld(t)
		m := w.submit(t, "", "reviewer", "no transcript to read")
		m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering, At: w.now, Attempt: true})
		require.NoError(t, err)
		m, err = w.ob.Recover(ctx, w.svc, m)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxOutcomeUnknown, m.State)
		assert.Contains(t, m.Reason, "outbox retry")
	})
}

// crashMidDelivery moves m to delivering as Attempt does, and writes the
// enqueue line to the transcript when arrived (the courier had handed it
// over when the service died).
func (w *outboxWorld) crashMidDelivery(t *testing.T, m ports.OutboxMessage, arrived bool) ports.OutboxMessage {
	at := time.Now()
	m, err := w.store.Move(context.Background(), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering,
		At: at, Attempt: true, SessionID: idA, Transcript: w.fake.Transcript()})
	require.NoError(t, err)
	if arrived {
		w.fake.enqueue(m.Text, at.Add(10*time.Millisecond))
	} else {
		w.fake.enqueue("some other message", at.Add(10*time.Millisecond))
	}
	return m
}

// Retry of an outcome_unknown message looks at the target first: a
// transcript that shows it arrived makes it delivered, not sent again; one
// that does not, or nothing to look at, makes it due, the reason saying
// what was found.
func TestOutboxRetryOfOutcomeUnknownLooksFirst(t *testing.T) {
	ctx := context.Background()
	unknown := func(t *testing.T, w *outboxWorld, text string, arrived bool) ports.OutboxMessage {
		m := w.submit(t, "", "reviewer", text)
		m = w.crashMidDelivery(t, m, arrived)
		m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivering}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: w.now, Reason: "the courier died"})
		require.NoError(t, err)
		return m
	}
	t.Run("it arrived", func(t *testing.T) {
		w := newOutboxWorld(t)
		w.fake = startFake(t, w.dir, idA, "reviewer")
		m := unknown(t, w, "it was there", true)
		m, err := w.ob.Retry(ctx, w.svc, m.ID, true)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxDelivered, m.State)
		assert.Contains(t, m.Reason, "looked first: the transcript shows it arrived")
		assert.Contains(t, m.Reason, "not sent again")
		due, err := w.store.List(ctx, pendingOnly)
		require.NoError(t, err)
		assert.Empty(t, due)
	})
	t.Run("it did not", func(t *testing.T) {
		w := newOutboxWorld(t)
		w.fake = startFake(t, w.dir, idA, "reviewer")
		m := unknown(t, w, "it was not there", false)
		m, err := w.ob.Retry(ctx, w.svc, m.ID, true)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxStored, m.State)
		assert.Contains(t, m.Reason, "looked first: the transcript does not show it")
	})
	t.Run("nothing to look at", func(t *testing.T) {
		w := newOutboxWorld(t)
		m := w.submit(t, "", "reviewer", "receipt only")
		m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: w.now})
		require.NoError(t, err)
		m, err = w.ob.Retry(ctx, w.svc, m.ID, true)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxStored, m.State)
		assert.Contains(t, m.Reason, "could not look first")
		assert.Contains(t, m.Reason, "may arrive twice")
	})
}

// racingStore is a store whose message turns outcome_unknown (a hand-over
// that ended unsure) right after Get read it: what Retry read is stale.
type racingStore struct {
	ports.Outbox
	now time.Time
}

func (s racingStore) Get(ctx context.Context, id int64) (ports.OutboxMessage, []ports.OutboxEvent, error) {
	m, h, err := s.Outbox.Get(ctx, id)
	if err == nil {
		_, err = s.Move(ctx, id, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: s.now, Reason: "the courier died"})
	}
	return m, h, err
}

// A retry the user did not confirm never sends an outcome_unknown message
// again: the use case refuses it, also when the message became
// outcome_unknown after the caller (the page) last saw it.
func TestOutboxRetryOfOutcomeUnknownNeedsTheUsersConfirmation(t *testing.T) {
	ctx := context.Background()
	t.Run("outcome_unknown when asked", func(t *testing.T) {
		w := newOutboxWorld(t)
		m := w.submit(t, "", "reviewer", "maybe there")
		m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: w.now})
		require.NoError(t, err)
		_, err = w.ob.Retry(ctx, w.svc, m.ID, false)
		require.ErrorIs(t, err, app.ErrUnconfirmed)
		assert.Contains(t, err.Error(), fmt.Sprintf("message %d is outcome_unknown", m.ID))
		got, _ := w.state(t, m.ID)
		assert.Equal(t, domain.OutboxOutcomeUnknown, got.State, "left as it was")
	})
	t.Run("became outcome_unknown while the page looked", func(t *testing.T) {
		w := newOutboxWorld(t)
		m := w.submit(t, "", "reviewer", "maybe there")
		ob := app.NewOutbox(racingStore{Outbox: w.store, now: w.now}, func() time.Time { return w.now })
		_, err := ob.Retry(ctx, w.svc, m.ID, false)
		require.ErrorIs(t, err, app.ErrUnconfirmed)
		got, _ := w.state(t, m.ID)
		assert.Equal(t, domain.OutboxOutcomeUnknown, got.State, "not stored again to be sent")
	})
	t.Run("a stored message needs no confirmation", func(t *testing.T) {
		w := newOutboxWorld(t)
		m := w.submit(t, "", "reviewer", "waiting")
		m, err := w.ob.Retry(ctx, w.svc, m.ID, false)
		require.NoError(t, err)
		assert.Equal(t, domain.OutboxStored, m.State)
	})
}

func TestOutboxCancel(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "reviewer", "never mind")
	m, err := w.ob.Cancel(ctx, m.ID, "cancelled by outbox cancel")
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxCancelled, m.State)
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Empty(t, due)
	_, err = w.ob.Cancel(ctx, 4242, "x")
	assert.ErrorIs(t, err, ports.ErrNoMessage)
}

// An attempt that waits (SendRequest.Wait, for hosts of the use case) and
// sees the session take the message up records taken_up after delivered.
func TestOutboxAttemptThatWaitsRecordsTakenUp(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	m := w.submit(t, "", "reviewer", "take this up")
	req := app.SendRequest{ConfirmOptions: app.ConfirmOptions{ConfirmTimeout: 2 * time.Second, Wait: 5 * time.Second}}
	m, res, err := w.ob.Attempt(ctx, w.svc, m, req)
	require.NoError(t, err)
	require.False(t, res.TakenUpAt.IsZero(), "the fake session took it up")
	assert.Equal(t, domain.OutboxTakenUp, m.State)
	_, hist := w.state(t, m.ID)
	assert.Equal(t, domain.OutboxDelivered, hist[len(hist)-2].State)
	last := hist[len(hist)-1]
	assert.Equal(t, res.TakenUpAt.UnixNano(), last.At.UnixNano(), "taken_up at the take-up line's time")
	assert.Contains(t, last.Reason, "took it up")
}

// A durable send that awaits a reply records delivered as soon as the
// harness has the message (not after the reply wait), then replied at the
// reply's time with its sender and words.
func TestOutboxAttemptThatAwaitsAReplyRecordsReplied(t *testing.T) {
	ctx := context.Background()
	svc, fc := awaitWorld(t)
	w := newOutboxWorld(t)
	m := w.submit(t, "", "solo", "question")
	replyAt := time.Now().Add(-time.Second).UTC()
	seenDelivered := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		seen := false
		for !seen && time.Now().Before(deadline) {
			got, _, err := w.store.Get(ctx, m.ID)
			seen = err == nil && got.State == domain.OutboxDelivered
			time.Sleep(5 * time.Millisecond)
		}
		seenDelivered <- seen
		fc.get(0).inbound <- domain.NewInbound("uds:/tmp/cc-socks/6000.sock", "solo", "the answer", replyAt)
	}()
	m, res, err := w.ob.Attempt(ctx, svc, m, app.SendRequest{AwaitReply: time.Minute, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	require.NoError(t, err)
	require.NotNil(t, res.Reply)
	assert.True(t, <-seenDelivered, "delivered is recorded before the reply came")
	assert.Equal(t, domain.OutboxReplied, m.State)
	_, hist := w.state(t, m.ID)
	var states []string
	for _, e := range hist {
		states = append(states, e.State.String())
	}
	assert.Equal(t, []string{"stored", "delivering", "delivered", "replied"}, states)
	last := hist[len(hist)-1]
	assert.Equal(t, replyAt.UnixNano(), last.At.UnixNano(), "replied at the reply's time")
	assert.Contains(t, last.Reason, `from "solo"`)
	assert.Contains(t, last.Reason, "the answer")
	assert.Equal(t, "c1-m1-question", m.MsgID)
}

// No reply in time: the message stays delivered (it was handed over), and
// its history says no reply came.
func TestOutboxAttemptThatAwaitsAReplyNoReply(t *testing.T) {
	ctx := context.Background()
	svc, _ := awaitWorld(t)
	w := newOutboxWorld(t)
	m := w.submit(t, "", "solo", "question")
	m, _, err := w.ob.Attempt(ctx, svc, m, app.SendRequest{AwaitReply: 200 * time.Millisecond, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	_, hist := w.state(t, m.ID)
	require.Len(t, hist, 4)
	assert.Equal(t, domain.OutboxDelivered, hist[2].State)
	assert.Equal(t, domain.OutboxDelivered, hist[3].State)
	assert.Contains(t, hist[3].Reason, "no_reply")
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Empty(t, due, "a message handed over is never sent again")
}

// A wait that ends before the take-up line shows says so in the history;
// the message stays delivered.
func TestOutboxAttemptThatWaitsWithoutTakeUpSaysWhy(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	w.tr.queueOnly = true
	m := w.submit(t, "", "reviewer", "never taken up")
	req := app.SendRequest{ConfirmOptions: app.ConfirmOptions{ConfirmTimeout: 2 * time.Second, Wait: 300 * time.Millisecond}}
	m, res, err := w.ob.Attempt(ctx, w.svc, m, req)
	require.NoError(t, err)
	require.True(t, res.TakenUpAt.IsZero())
	assert.Equal(t, domain.OutboxDelivered, m.State)
	_, hist := w.state(t, m.ID)
	last := hist[len(hist)-1]
	assert.Equal(t, domain.OutboxDelivered, last.State)
	assert.Contains(t, last.Reason, "take-up was not seen")
	assert.Contains(t, last.Reason, "timeout")
}

// A far send that waited for the take-up and the reply records its lines
// in time order: delivered at the far hand-over's end (its start and
// elapsed time), not when the wait ended, then taken_up and replied at
// their times.
func TestOutboxAttemptElsewhereRecordsTimesInOrder(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Host: "far", Text: "green?", TTL: time.Hour})
	require.NoError(t, err)
	t0 := w.now
	send := func(context.Context, app.SendRequest) (app.SendResult, error) {
		w.now = t0.Add(time.Minute) // the far side waited for the reply
		return app.SendResult{Receipt: domain.Receipt{Outcome: "queued", Transport: "courier"}, Started: t0, Elapsed: time.Second,
			Confirmation: app.Confirmation{TakenUpAt: t0.Add(5 * time.Second)},
			Reply:        &domain.Inbound{FromName: "reviewer", Text: "yes", At: t0.Add(10 * time.Second)}}, nil
	}
	m, _, err = w.ob.AttemptElsewhere(ctx, m, app.SendRequest{ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}, AwaitReply: time.Minute}, send)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxReplied, m.State)
	_, hist := w.state(t, m.ID)
	var got []string
	for _, e := range hist {
		got = append(got, fmt.Sprintf("%s +%s", e.State, e.At.Sub(t0)))
	}
	assert.Equal(t, []string{"stored +0s", "delivering +0s", "delivered +1s", "taken_up +5s", "replied +10s"}, got)
}

// A far hand-over told before its confirmation ended (req.Handed with the
// transport's receipt) is recorded then; the end's receipt, when it came
// to another outcome, is recorded over it; an end without a receipt (the
// far call cut off during the wait) takes the hand-over back to nothing.
func TestOutboxAttemptElsewhereRecordsTheHandOverWhenTold(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	cut := domain.Refuse(domain.ReasonOutcomeUnknown, "the connection to far was lost")
	for _, tc := range []struct {
		name    string
		end     app.SendResult
		err     error
		outcome string
		states  []string
	}{
		{"confirmed at the end", app.SendResult{Receipt: domain.Receipt{Outcome: "posted", Transport: "socket"}, Confirmation: app.Confirmation{Outcome: domain.OutcomeDelivered}}, nil,
			"delivered", []string{"stored", "delivering", "delivered", "delivered", "delivered"}},
		{"the same at the end", app.SendResult{Receipt: domain.Receipt{Outcome: "posted", Transport: "socket"}}, nil,
			"posted", []string{"stored", "delivering", "delivered", "delivered"}},
		{"cut off during the wait", app.SendResult{}, cut,
			"posted", []string{"stored", "delivering", "delivered", "delivered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Host: "far", Text: tc.name, TTL: time.Hour})
			require.NoError(t, err)
			var during ports.OutboxMessage
			send := func(_ context.Context, req app.SendRequest) (app.SendResult, error) {
				require.NotNil(t, req.Handed)
				req.Handed(app.SendResult{Receipt: domain.Receipt{Outcome: "posted", Transport: "socket"}})
				during, _ = w.state(t, m.ID)
				return tc.end, tc.err
			}
			m, _, err = w.ob.AttemptElsewhere(ctx, m, app.SendRequest{ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}}, send)
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, domain.OutboxDelivered, during.State, "recorded when told, before the end")
			assert.Equal(t, domain.OutboxDelivered, m.State)
			assert.Equal(t, tc.outcome, m.Outcome)
			_, hist := w.state(t, m.ID)
			var got []string
			for _, e := range hist {
				got = append(got, e.State.String())
			}
			assert.Equal(t, tc.states, got)
		})
	}
}

// A message for another machine is attempted through that machine's
// peerctl (the send given): what may pass before any hand-over (a host
// that does not answer, a far not_live) stores it again with backoff; its
// receipt delivers it with the far side's words; a far side that may have
// had the text is outcome_unknown, and so is one a stopped service left
// delivering (no far transcript is read), naming the host.
func TestOutboxAttemptElsewhere(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Host: "far", Text: "the far build broke", TTL: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, "far", m.Host)
	var calls []app.SendRequest
	answer := func(res app.SendResult, err error) app.SendFunc {
		return func(_ context.Context, req app.SendRequest) (app.SendResult, error) {
			calls = append(calls, req)
			return res, err
		}
	}
	for i, refusal := range []error{
		domain.Refuse(domain.ReasonHostUnreachable, "ssh far failed (exit 255)"),
		domain.Refuse(domain.ReasonNotLive, "no live session matches \"reviewer\""),
	} {
		m, _, err = w.ob.AttemptElsewhere(ctx, m, app.SendRequest{}, answer(app.SendResult{}, refusal))
		require.ErrorIs(t, err, refusal)
		assert.Equal(t, domain.OutboxStored, m.State)
		assert.Equal(t, refusal.Error(), m.Reason)
		assert.Equal(t, i+1, m.Attempts)
		assert.True(t, m.NextAt.After(w.now), "backoff")
	}
	require.Len(t, calls, 2)
	assert.True(t, calls[0].Settled, "the far side refuses a target still starting")
	assert.Equal(t, "reviewer", calls[0].Address)
	assert.Equal(t, "the far build broke", calls[0].Text)

	w.now = w.now.Add(time.Minute)
	m, _, err = w.ob.AttemptElsewhere(ctx, m, app.SendRequest{}, answer(app.SendResult{Receipt: domain.Receipt{Outcome: "queued", Transport: "courier", MsgID: "msg-9"}}, nil))
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, "msg-9", m.MsgID)
	assert.Equal(t, "courier", m.Transport)

	for _, tc := range []struct {
		name string
		end  func(m ports.OutboxMessage) (ports.OutboxMessage, error)
	}{
		{"the far side may have had it", func(m ports.OutboxMessage) (ports.OutboxMessage, error) {
			m, _, err := w.ob.AttemptElsewhere(ctx, m, app.SendRequest{}, answer(app.SendResult{},
				domain.Refuse(domain.ReasonOutcomeUnknown, "peerctl on far ended with exit 2 and no receipt")))
			return m, err
		}},
		{"the service stopped during the hand-over", func(m ports.OutboxMessage) (ports.OutboxMessage, error) {
			m, err := w.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxDelivering, At: w.now, Attempt: true})
			require.NoError(t, err)
			return w.ob.Recover(ctx, nil, m)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Host: "far", Text: tc.name, TTL: time.Hour})
			require.NoError(t, err)
			m, _ = tc.end(m)
			assert.Equal(t, domain.OutboxOutcomeUnknown, m.State)
			assert.Contains(t, m.Reason, "far")
		})
	}
}

// A clock that jumps back after a delivery sends nothing again: what is due
// is decided by the message's state, not by its times; a message stored
// before the jump keeps its TTL as stored (a longer wait, never a resend).
func TestOutboxClockJumpBackSendsNothingTwice(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	m := w.submit(t, "", "reviewer", "once only")
	m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
	require.NoError(t, err)
	require.Equal(t, domain.OutboxDelivered, m.State)
	waiting := w.submit(t, "", "nobody-here", "kept")
	expires := waiting.Expires

	w.now = w.now.Add(-3 * time.Hour)
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	require.Len(t, due, 1, "only the message still waiting")
	assert.Equal(t, waiting.ID, due[0].ID)
	_, err = w.ob.Retry(ctx, w.svc, m.ID, true)
	assert.ErrorIs(t, err, app.ErrNotRetryable, "a delivered message is never sent again")
	waiting, _, _ = w.ob.Attempt(ctx, w.svc, due[0], confirmFast)
	assert.Equal(t, domain.OutboxStored, waiting.State)
	assert.Equal(t, expires.UnixNano(), waiting.Expires.UnixNano(), "its TTL is as stored")
	assert.Equal(t, 1, w.tr.sent("once only"))
}

// A target that stays away is tried with backoff whatever the refusal: 2 s
// doubled per try (at most MaxBackoff), not every 2 s forever; and its
// history keeps one row for the repeated reason, with a count and the last
// time, not a row per try.
func TestOutboxBackoffCountsEveryTryAndHistoryFolds(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	start := w.now
	m := w.submit(t, "", "away", "when you are back")
	var at []time.Duration
	for w.now.Sub(start) <= 70*time.Second {
		if !m.NextAt.After(w.now) {
			at = append(at, w.now.Sub(start))
			var err error
			m, _, err = w.ob.Attempt(ctx, w.svc, m, confirmFast)
			require.Error(t, err)
			require.Equal(t, domain.OutboxStored, m.State)
		}
		w.now = w.now.Add(time.Second)
	}
	assert.Equal(t, []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second, 62 * time.Second}, at,
		"2 s, then doubled per try")
	assert.Equal(t, 6, m.Tries)
	assert.Zero(t, m.Attempts, "nothing was handed over")
	_, hist := w.state(t, m.ID)
	require.Len(t, hist, 2, "the submit, then one row for the repeated reason")
	assert.Equal(t, 6, hist[1].Count)
	assert.Equal(t, start.UnixNano(), hist[1].At.UnixNano(), "the first time")
	assert.Equal(t, (start.Add(62 * time.Second)).UnixNano(), hist[1].Last.UnixNano(), "the last time")
	assert.Contains(t, hist[1].Reason, "not_live")

	// Far away, the wait stops growing at MaxBackoff.
	for i := 0; i < 10; i++ {
		w.now = m.NextAt
		m, _, _ = w.ob.Attempt(ctx, w.svc, m, confirmFast)
	}
	assert.Equal(t, app.MaxBackoff, m.NextAt.Sub(w.now))
}

// Finished messages are pruned, history and all, once the retention period
// has passed since their last change; messages still to be delivered and
// outcome_unknown ones (they wait for a person) are kept whatever their
// age. Pruning runs at most once per PruneEvery.
func TestOutboxPrunesFinishedMessagesAfterTheRetention(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.ob.WithRetention(48 * time.Hour)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	delivered := w.submit(t, "k-delivered", "reviewer", "delivered long ago")
	delivered, _, err := w.ob.Attempt(ctx, w.svc, delivered, confirmFast)
	require.NoError(t, err)
	require.Equal(t, domain.OutboxDelivered, delivered.State)
	cancelled := w.submit(t, "", "reviewer", "cancelled long ago")
	_, err = w.ob.Cancel(ctx, cancelled.ID, "x")
	require.NoError(t, err)
	unknown := w.submit(t, "", "reviewer", "maybe")
	_, err = w.store.Move(ctx, unknown.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: w.now})
	require.NoError(t, err)
	waiting := w.submit(t, "", "nobody-here", "still waiting")

	n, err := w.ob.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is old enough yet")
	w.now = w.now.Add(49 * time.Hour)
	fresh := w.submit(t, "", "reviewer", "cancelled just now")
	_, err = w.ob.Cancel(ctx, fresh.ID, "x")
	require.NoError(t, err)
	n, err = w.ob.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	for _, id := range []int64{delivered.ID, cancelled.ID} {
		_, _, err := w.store.Get(ctx, id)
		assert.ErrorIs(t, err, ports.ErrNoMessage)
	}
	for _, id := range []int64{unknown.ID, waiting.ID, fresh.ID} {
		_, _, err := w.store.Get(ctx, id)
		assert.NoError(t, err, "message %d is kept", id)
	}
	w.ob.WithRetention(time.Minute)
	w.now = w.now.Add(app.PruneEvery / 2)
	n, err = w.ob.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "at most once per PruneEvery")
	w.now = w.now.Add(app.PruneEvery / 2)
	n, err = w.ob.Prune(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ev, err := w.store.Events(ctx, 0, 100)
	require.NoError(t, err)
	for _, e := range ev {
		assert.NotContains(t, []int64{delivered.ID, cancelled.ID}, e.MessageID, "its history goes with it")
	}
	// Its key is free again: the same key stores a new message.
	again, created, err := w.ob.Submit(ctx, nil, app.DurableRequest{Key: "k-delivered", Address: "reviewer", Text: "delivered long ago", TTL: time.Hour})
	require.NoError(t, err)
	assert.True(t, created)
	assert.NotEqual(t, delivered.ID, again.ID)

	w.ob.WithRetention(0)
	w.now = w.now.Add(365 * 24 * time.Hour)
	n, err = w.ob.Prune(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a retention of 0 keeps everything")
}

// A durable message never goes to an id prefix: refused at submit when the
// registry shows the address begins a session's id (a usage error, nothing
// stored), and, for one stored while nothing matched, never delivered to a
// session that started later with that prefix: it stays stored.
func TestOutboxNeverSendsToAnIDPrefix(t *testing.T) {
	ctx := context.Background()
	prefix := idA[:8]
	t.Run("at submit", func(t *testing.T) {
		w := newOutboxWorld(t)
		w.fake = startFake(t, w.dir, idA, "reviewer")
		_, _, err := w.ob.Submit(ctx, w.svc, app.DurableRequest{Address: prefix, Text: "to a prefix", TTL: time.Hour})
		require.ErrorIs(t, err, domain.ErrBadAddress)
		require.ErrorIs(t, err, domain.ErrDurablePrefix)
		assert.Contains(t, err.Error(), idA)
		assert.Contains(t, err.Error(), "started since")
		all, err := w.store.List(ctx, ports.OutboxFilter{})
		require.NoError(t, err)
		assert.Empty(t, all)
		for _, ok := range []string{idA, "reviewer", "someone-later"} {
			_, _, err := w.ob.Submit(ctx, w.svc, app.DurableRequest{Address: ok, Text: "to " + ok, TTL: time.Hour})
			assert.NoError(t, err, ok)
		}
	})
	t.Run("a session started later", func(t *testing.T) {
		w := newOutboxWorld(t)
		m, _, err := w.ob.Submit(ctx, w.svc, app.DurableRequest{Address: prefix, Text: "meant for another", TTL: time.Hour})
		require.NoError(t, err, "nothing begins with it yet")
		w.fake = startFake(t, w.dir, idA, "newcomer")
		m, _, err = w.ob.Attempt(ctx, w.svc, m, confirmFast)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
		assert.Contains(t, r.Detail, "never goes to an id prefix")
		assert.Equal(t, domain.OutboxStored, m.State)
		assert.Zero(t, w.tr.sent("meant for another"))
	})
}

// An attempt whose context ends while it runs (the client hangs up, the
// service is stopped with SIGTERM) still records what came of it: a
// hand-over is delivered, a send that handed nothing over is stored again,
// one interrupted before it began too; none is left delivering with its
// outcome lost.
func TestOutboxAttemptCutShortStillRecordsWhatHappened(t *testing.T) {
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	for _, tc := range []struct {
		name  string
		res   app.SendResult
		err   error
		state domain.OutboxState
	}{
		{"handed over", app.SendResult{Receipt: domain.Receipt{Outcome: "queued", Transport: "courier", MsgID: "msg-7"}}, nil, domain.OutboxDelivered},
		{"nothing handed over", app.SendResult{}, domain.Refuse(domain.ReasonDeliveryFailed, "interrupted before anything was sent"), domain.OutboxStored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Host: "far", Text: tc.name, TTL: time.Hour})
			require.NoError(t, err)
			m, _, err = w.ob.AttemptElsewhere(ctx, m, app.SendRequest{}, func(context.Context, app.SendRequest) (app.SendResult, error) {
				cancel()
				return tc.res, tc.err
			})
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.state, m.State)
			got, _ := w.state(t, m.ID)
			assert.Equal(t, tc.state, got.State)
		})
	}
	t.Run("interrupted before it began", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		m := w.submit(t, "", "reviewer", "never begun")
		cancel()
		m, _, err := w.ob.Attempt(ctx, w.svc, m, confirmFast)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
		assert.Equal(t, domain.OutboxStored, m.State)
		got, _ := w.state(t, m.ID)
		assert.Equal(t, domain.OutboxStored, got.State)
		assert.Contains(t, got.Reason, "interrupted before anything was sent")
		assert.Zero(t, w.tr.sent("never begun"))
	})
}

// policyService is w's Service asking the trust policy p for a sender
// from (a message approved by a person when from.Approved).
func (w *outboxWorld) policyService(p rules, from app.Sending) *app.Service {
	return app.New(fsregistry.New(fsregistry.SessionsDir(w.dir)), procliveness.New(), w.tr, w.dir, append(variants()[1].opts(), app.WithPolicy(p, from))...)
}

// A held message is stored awaiting approval with its sender and rule,
// is not due, and reaches the target once, after Approve, on an attempt
// whose hold passes because a person approved it.
func TestOutboxHeldWaitsForApprovalThenIsDeliveredOnce(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	w.fake = startFake(t, w.dir, idA, "reviewer")
	p := rules{rules: []domain.Rule{mustRule(t, "hold", "mcp", "*")}}
	from := domain.NewSender(domain.EntranceMCP, "").WithSession("writer-1", idB)
	d := domain.Decide(p.rules, from, domain.AddressTarget("reviewer", ""))
	m, created, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Text: "deploy now", TTL: time.Hour, Sender: from, Held: &d})
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, domain.OutboxAwaitingApproval, m.State)
	assert.Equal(t, "rule 1: hold from=mcp to=*", m.Rule)
	assert.Equal(t, "awaiting_approval", app.DurableOutcome(m))
	// Its reason is written before its id is known: it names no command
	// that would want one ("peerctl outbox approve" with no id).
	assert.NotContains(t, m.Reason, "peerctl outbox")
	assert.Contains(t, m.Reason, "nothing was sent: outbox approve delivers it, outbox deny ends it")
	got, _ := w.state(t, m.ID)
	assert.Equal(t, "mcp:writer-1", got.Sender.String())
	assert.Equal(t, idB, got.Sender.SessionID())
	due, err := w.store.List(ctx, pendingOnly)
	require.NoError(t, err)
	assert.Empty(t, due, "a held message is not attempted")

	// Without approval, an attempt is held again: nothing is sent.
	_, err = w.ob.Deny(ctx, m.ID+1, domain.NewSender(domain.EntranceCLI, ""))
	assert.ErrorIs(t, err, ports.ErrNoMessage)
	w.now = w.now.Add(2 * time.Hour) // approved after its TTL: counted again from the approval
	m, err = w.ob.Approve(ctx, m.ID, domain.NewSender(domain.EntranceCLI, "").WithSession("lead", idA))
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, m.State)
	assert.Equal(t, "cli:lead", m.ApprovedBy)
	assert.Contains(t, m.Reason, "approved by cli:lead")
	assert.Equal(t, w.now.Add(time.Hour).UnixNano(), m.Expires.UnixNano())
	_, err = w.ob.Approve(ctx, m.ID, domain.NewSender(domain.EntranceCLI, ""))
	assert.ErrorIs(t, err, app.ErrNotAwaiting, "approved once")

	m, _, err = w.ob.Attempt(ctx, w.policyService(p, app.Sending{Entrance: domain.EntranceMCP, SessionName: "writer-1", SessionID: idB, Approved: true}), m, confirmFast)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDelivered, m.State)
	assert.Equal(t, 1, w.tr.sent("deploy now"))
	_, hist := w.state(t, m.ID)
	var states []string
	for _, e := range hist {
		states = append(states, e.State.String())
	}
	assert.Equal(t, []string{"awaiting_approval", "stored", "delivering", "delivered"}, states)
}

// Deny ends a held message (denied: finished, never sent); approving or
// denying a message that does not await approval is ErrNotAwaiting.
func TestOutboxDeny(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	d := domain.Decide([]domain.Rule{mustRule(t, "hold", "*", "*")}, domain.NewSender(domain.EntranceCLI, ""), domain.AddressTarget("reviewer", ""))
	m, _, err := w.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Text: "x", TTL: time.Hour, Held: &d})
	require.NoError(t, err)
	m, err = w.ob.Deny(ctx, m.ID, domain.NewSender(domain.EntranceDashboard, ""))
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxDenied, m.State)
	assert.True(t, m.State.Finished())
	assert.Contains(t, m.Reason, "denied by dashboard")
	_, err = w.ob.Approve(ctx, m.ID, domain.NewSender(domain.EntranceCLI, ""))
	assert.ErrorIs(t, err, app.ErrNotAwaiting)
	assert.Contains(t, err.Error(), "is denied")
	_, err = w.ob.Retry(ctx, nil, m.ID, true)
	assert.ErrorIs(t, err, app.ErrNotRetryable, "a denied message is not sent by a retry")
	plain := w.submit(t, "", "reviewer", "y")
	_, err = w.ob.Deny(ctx, plain.ID, domain.NewSender(domain.EntranceCLI, ""))
	assert.ErrorIs(t, err, app.ErrNotAwaiting)
	assert.Zero(t, w.tr.sent("x"))
}

// An attempt decides the policy with the rules of its time: a deny rule
// added since the message was stored ends it refused (not_allowed); a
// hold rule keeps it awaiting approval, with the rule; nothing is sent.
func TestOutboxAttemptDecidesThePolicyAgain(t *testing.T) {
	ctx := context.Background()
	for action, want := range map[string]domain.OutboxState{"deny": domain.OutboxRefused, "hold": domain.OutboxAwaitingApproval} {
		t.Run(action, func(t *testing.T) {
			w := newOutboxWorld(t)
			w.fake = startFake(t, w.dir, idA, "reviewer")
			m := w.submit(t, "", "reviewer", "late")
			svc := w.policyService(rules{rules: []domain.Rule{mustRule(t, action, "relay", "reviewer")}}, app.Sending{Entrance: domain.EntranceRelay})
			m, _, err := w.ob.Attempt(ctx, svc, m, confirmFast)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
			assert.Equal(t, want, m.State)
			assert.Contains(t, m.Reason, action+" by rule 1")
			assert.Zero(t, w.tr.sent("late"))
			if action == "hold" {
				assert.Equal(t, "rule 1: hold from=relay to=reviewer", m.Rule)
			}
		})
	}
}

// A message whose target is not there is decided by its address: a deny
// rule added since it was stored ends it refused, not stored again.
func TestOutboxAttemptWithNoTargetDecidesByTheAddress(t *testing.T) {
	ctx := context.Background()
	w := newOutboxWorld(t)
	m := w.submit(t, "", "nobody", "late")
	svc := w.policyService(rules{rules: []domain.Rule{mustRule(t, "deny", "cli", "nobody")}}, app.Sending{Entrance: domain.EntranceCLI})
	m, _, err := w.ob.Attempt(ctx, svc, m, confirmFast)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
	assert.Equal(t, domain.OutboxRefused, m.State)
	assert.Contains(t, m.Reason, "deny by rule 1")
}
