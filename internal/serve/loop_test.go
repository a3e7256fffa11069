package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
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

// fakeMail is the fleet's bus as a sender's service sees it: what it
// posted to each node, in order; while away is set, every post fails.
type fakeMail struct {
	mu    sync.Mutex
	away  bool
	tries int
	keys  []string
}

func (f *fakeMail) post(_ context.Context, to string, o wire.SendOrder, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.away {
		return errors.New("no server answers")
	}
	f.keys = append(f.keys, to+":"+o.Key)
	return nil
}

func (f *fakeMail) posted() ([]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...), f.tries
}

func (f *fakeMail) setAway(away bool) {
	f.mu.Lock()
	f.away = away
	f.mu.Unlock()
}

// clock is the loop's clock in a test: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// onBus is a sender's service on the fleet's bus (mail), over an outbox
// file of its own, the loop's and the outbox's clock c.
func onBus(t *testing.T, mail *fakeMail, c *clock) (*Server, wire.Settings) {
	t.Helper()
	st, err := outbox.Open(t.Context(), filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s := newServer(t.Context(), Options{})
	s.store, s.ob, s.post, s.now = st, app.NewOutbox(st, c.now), mail.post, c.now
	return s, homes(t)
}

// sendToBeta is `send --durable --key KEY --host nats:beta inbox-0 TEXT`
// as the service takes it: its answer's outbox object.
func sendToBeta(t *testing.T, s *Server, set wire.Settings, key string) *Ref {
	t.Helper()
	a := s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "inbox-0", Text: "rebase on main (" + key + ")", NoConfirm: true},
		Host: "nats:beta", Durable: time.Hour, Key: key, Settings: set}, func(Ref) {})
	require.Nil(t, a.Refusal, "%+v", a)
	require.NotNil(t, a.Ref, "%+v", a)
	return a.Ref
}

// sendBacklog is n such sends (keys k0, k1, ...), all stored: their
// outbox objects, and their mail as the bus would have it, in order.
func sendBacklog(t *testing.T, s *Server, set wire.Settings, n int) (refs []*Ref, want []string) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("k%d", i)
		ref := sendToBeta(t, s, set, key)
		assert.Equal(t, "stored", ref.State)
		refs, want = append(refs, ref), append(want, "beta:"+key)
	}
	return refs, want
}

// passDone is one pass of the loop with the jobs it started finished.
func passDone(s *Server) {
	s.pass()
	s.jobs.Wait()
}

// Durable sends to one session of a node are all put in the node's mail
// as they are sent, in order, each without waiting for the receipts of
// the ones before it: the bus keeps their order, and they wait there for
// the node's service even if this machine is off by then. (Each used to
// wait in this outbox until the node had delivered the one before it,
// and its receipt had come back: one a second.)
func TestDurableSendsToANodeAreAllPutInItsMail(t *testing.T) {
	mail, c := &fakeMail{}, &clock{t: time.Now()}
	s, set := onBus(t, mail, c)
	refs, want := sendBacklog(t, s, set, 5)
	for i, ref := range refs {
		assert.Contains(t, string(ref.Reason), "in node beta's mail", "message %d", i)
	}
	got, _ := mail.posted()
	assert.Equal(t, want, got)
	passDone(s)
	got, tries := mail.posted()
	assert.Equal(t, want, got, "a pass posts nothing twice")
	assert.Equal(t, 5, tries)
}

// Messages to a node stored while the bus was away are put in its mail
// in one pass, oldest first, once the bus answers and the oldest is due
// again: not one a pass, nor one per receipt.
func TestABacklogForANodeIsPostedInOnePassInOrder(t *testing.T) {
	mail, c := &fakeMail{away: true}, &clock{t: time.Now()}
	s, set := onBus(t, mail, c)
	_, want := sendBacklog(t, s, set, 5)
	got, tries := mail.posted()
	require.Empty(t, got)
	require.Equal(t, 1, tries, "the ones behind the first wait behind it")
	passDone(s)
	_, tries = mail.posted()
	require.Equal(t, 1, tries, "the first is not due again before its backoff")

	mail.setAway(false)
	c.add(domain.Backoff(1, app.MaxBackoff))
	passDone(s)
	got, _ = mail.posted()
	assert.Equal(t, want, got)
	for _, key := range want {
		found, err := s.store.List(t.Context(), ports.OutboxFilter{Key: key[len("beta:"):]})
		require.NoError(t, err)
		require.Len(t, found, 1)
		assert.Equal(t, app.BusTransport, found[0].Transport, "%s: %s %s", key, found[0].State, found[0].Reason)
	}
}

// A registry change makes at most one early pass per earlyEvery by the
// loop's clock, however often records change: a change sooner makes the
// next pass a plain one (nothing tried before its time), and the early
// pass comes once earlyEvery has passed. No pass waits for time itself.
func TestRecordChurnMakesOneEarlyPassPerEarlyEvery(t *testing.T) {
	mail, c := &fakeMail{away: true}, &clock{t: time.Now()}
	s, set := onBus(t, mail, c)
	sendToBeta(t, s, set, "k0") // not posted: due again after its backoff
	_, tries := mail.posted()
	require.Equal(t, 1, tries)

	s.early.Store(true)
	passDone(s)
	_, tries = mail.posted()
	require.Equal(t, 2, tries, "an early pass tries it before its time")

	for range 3 { // records change on, at the same instant
		s.early.Store(true)
		passDone(s)
	}
	_, tries = mail.posted()
	assert.Equal(t, 2, tries, "one early pass per earlyEvery")
	assert.True(t, s.early.Load(), "the change waits for its time")

	c.add(earlyEvery)
	passDone(s)
	_, tries = mail.posted()
	assert.Equal(t, 3, tries, "the change's early pass, earlyEvery after the last")
	passDone(s)
	_, tries = mail.posted()
	assert.Equal(t, 3, tries, "nothing more asked for")
}

// Between passes, a registry change sooner than earlyEvery after the
// last early pass does not wake the loop (it waits for its time, however
// often records change), and a poke (a message stored, an attempt ended)
// wakes it at once all the same; a change once earlyEvery has passed
// wakes it.
func TestRecordChurnDoesNotHoldUpAPoke(t *testing.T) {
	c := &clock{t: time.Now()}
	s := newServer(t.Context(), Options{})
	// The next early pass an hour away: the timer armed for it does not
	// fire during the test, however slow the machine.
	s.now, s.earlyAt = c.now, c.now().Add(time.Hour)
	early := time.NewTimer(time.Hour)
	early.Stop()
	woke := make(chan bool, 1)
	s.stirred <- struct{}{}
	go func() { woke <- s.await(nil, early) }()
	require.Eventually(t, func() bool { return len(s.stirred) == 0 }, time.Minute, time.Millisecond, "the change to be read")
	s.stirred <- struct{}{}
	require.Eventually(t, func() bool { return len(s.stirred) == 0 }, time.Minute, time.Millisecond, "the next change to be read")
	s.poke()
	require.True(t, <-woke)
	assert.Empty(t, s.wake, "the poke woke it, not a change")

	c.add(time.Hour)
	s.stirred <- struct{}{}
	assert.True(t, s.await(nil, early), "a change once its time has come")
}
