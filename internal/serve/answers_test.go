package serve

import (
	"context"
	"errors"
	"fmt"
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

// answering is a service over a real outbox file whose sends find no
// session (empty harness homes): nothing can be handed over.
func answering(t *testing.T) (*Server, *outbox.Store, wire.Settings) {
	t.Helper()
	st, err := outbox.Open(context.Background(), filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s := newServer(t.Context(), Options{})
	s.store, s.ob = st, app.NewOutbox(st, nil)
	return s, st, homes(t)
}

// A TTL already over when the message comes to be tried gives a receipt
// that says expired (it gave nothing, exit 0).
func TestDurableSendExpiredAtOnceGivesAReceipt(t *testing.T) {
	s, _, set := answering(t)
	a := s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "too late", Timeout: time.Second},
		Durable: time.Nanosecond, Settings: set}, func(Ref) {})
	require.Nil(t, a.Refusal, "%+v", a)
	require.NotNil(t, a.Sent, "%+v", a)
	assert.Equal(t, "expired", a.Sent.Receipt.Outcome)
	require.NotNil(t, a.Ref)
	assert.Equal(t, "expired", a.Ref.State)
	assert.Contains(t, a.Sent.Receipt.Detail, "time to live passed")
}

// A repeated key answers with the first message as it stands: a message
// refused after its hand-over is "refused" (it was "queued", its receipt's
// word), with its id, state and target; the same key with another text is
// refused with key_conflict, and nothing new is stored.
func TestDurableSendRepeatedKeyOfARefusedMessage(t *testing.T) {
	ctx := context.Background()
	s, st, set := answering(t)
	m, _, err := s.ob.Submit(ctx, nil, app.DurableRequest{Key: "k1", Address: "reviewer", Text: "hello", TTL: time.Hour})
	require.NoError(t, err)
	_, err = st.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxRefused, At: time.Now(),
		Outcome: "queued", Transport: "inbox", Reason: "delivery_failed: the harness refused it"})
	require.NoError(t, err)
	order := func(text string) wire.SendOrder {
		return wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: text, Timeout: time.Second}, Durable: time.Hour, Key: "k1", Settings: set}
	}
	a := s.send(ctx, order("hello"), func(Ref) {})
	require.NotNil(t, a.Sent, "%+v", a)
	assert.Equal(t, "refused", a.Sent.Receipt.Outcome)
	require.NotNil(t, a.Ref)
	assert.True(t, a.Ref.Duplicate)
	assert.Equal(t, m.ID, a.Ref.ID)
	assert.Equal(t, "refused", a.Ref.State)
	assert.Equal(t, "reviewer", a.Ref.OutboxRef().Address)

	a = s.send(ctx, order("hello again"), func(Ref) { t.Error("a conflicting key stored a message") })
	require.NotNil(t, a.Refusal, "%+v", a)
	r, ok := domain.AsRefusal(a.Refusal.Err())
	require.True(t, ok)
	assert.Equal(t, domain.ReasonKeyConflict, r.Reason)
	assert.Equal(t, wire.ExitKeyConflict, wire.ExitCode(r.Reason))
	all, err := st.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// movesFail is an outbox that stores, and then cannot record a change.
type movesFail struct{ ports.Outbox }

func (movesFail) Move(context.Context, int64, []domain.OutboxState, ports.OutboxChange) (ports.OutboxMessage, error) {
	return ports.OutboxMessage{}, errors.New("disk I/O error")
}

// A durable send whose message was stored, and whose attempt could then
// not be recorded, never answers "nothing was stored": it names the
// message and how to look (before, outbox_unavailable said nothing was
// stored, and the message was delivered later).
func TestDurableSendStoredThenUnrecordedNamesTheMessage(t *testing.T) {
	s, st, set := answering(t)
	s.ob = app.NewOutbox(movesFail{st}, nil)
	var told *Ref
	a := s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "kept", Timeout: time.Second},
		Durable: time.Hour, Settings: set}, func(r Ref) { told = &r })
	require.NotNil(t, told, "the client heard it was stored")
	require.NotNil(t, a.Refusal, "%+v", a)
	r, ok := domain.AsRefusal(a.Refusal.Err())
	require.True(t, ok)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "disk I/O error")
	assert.Contains(t, r.Detail, fmt.Sprintf("peerctl outbox show %d", told.ID))
	assert.NotContains(t, r.Detail, "nothing was stored")
	all, err := st.List(t.Context(), ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// The retry op of an outcome_unknown message is refused (outcome_unknown,
// nothing changed) unless the request says the user confirmed it; the
// page's "Send again" and outbox retry do, and the page's Retry passes its
// flag through.
func TestRetryOfOutcomeUnknownTakesTheConfirmation(t *testing.T) {
	ctx := context.Background()
	s, st, _ := answering(t)
	m, _, err := s.ob.Submit(ctx, nil, app.DurableRequest{Address: "reviewer", Text: "maybe there", TTL: time.Hour})
	require.NoError(t, err)
	_, err = st.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: time.Now(), Reason: "the courier died"})
	require.NoError(t, err)

	a := s.Serve(ctx, Request{V: Protocol, Op: "retry", ID: m.ID}, nil)
	require.NotNil(t, a.Refusal, "%+v", a)
	r, _ := domain.AsRefusal(a.Refusal.Err())
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "may have arrived already")
	got, _, err := st.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxOutcomeUnknown, got.State, "nothing changed")

	res := webBackend{s: s}.Retry(ctx, m.ID, false)
	assert.Equal(t, wire.ExitOutcomeUnknown, res.Code)
	assert.Contains(t, string(res.JSON), `"reason":"outcome_unknown"`)

	res = webBackend{s: s}.Retry(ctx, m.ID, true)
	require.Equal(t, wire.ExitOK, res.Code, "%s", res.Stderr)
	got, _, err = st.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxStored, got.State, "stored again once confirmed (it could not be looked at)")
}
