package app_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/portsmock"
)

// fakeCourier is a ports.Courier: each Send numbers its receipt; die ends
// the "process" (Done) as a crash does; hand it inbound messages and
// notices with inbound and notice.
type fakeCourier struct {
	n        int
	inbound  chan domain.Inbound
	notices  chan domain.Notice
	done     chan struct{}
	dieOnce  sync.Once
	shutOnce sync.Once
	closed   atomic.Bool
	sends    atomic.Int32
	// dieOnSend makes the Send with this number (1-based) die instead of answering.
	dieOnSend int32
	// onSend, when set, runs at the start of every Send (a test's clock).
	onSend func()
}

var _ ports.Courier = (*fakeCourier)(nil)

func newFakeCourier(n int) *fakeCourier {
	return &fakeCourier{n: n, inbound: make(chan domain.Inbound, 8), notices: make(chan domain.Notice, 8), done: make(chan struct{})}
}

func (f *fakeCourier) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if f.onSend != nil {
		f.onSend()
	}
	k := f.sends.Add(1)
	if k == f.dieOnSend {
		f.die()
		return domain.Receipt{}, domain.Refuse(domain.ReasonDeliveryFailed, "the courier exited before the turn ended")
	}
	select {
	case <-f.done:
		return domain.Receipt{}, domain.Refuse(domain.ReasonDeliveryFailed, "the courier had already ended")
	default:
	}
	return domain.Receipt{Transport: "courier", Outcome: "queued", MsgID: fmt.Sprintf("c%d-m%d-%s", f.n, k, msg.Text())}, nil
}

func (f *fakeCourier) Inbound() <-chan domain.Inbound { return f.inbound }
func (f *fakeCourier) Notices() <-chan domain.Notice  { return f.notices }
func (f *fakeCourier) Done() <-chan struct{}          { return f.done }
func (f *fakeCourier) die()                           { f.dieOnce.Do(func() { close(f.done) }) }
func (f *fakeCourier) Close() error {
	f.die()
	f.shutOnce.Do(func() {
		f.closed.Store(true)
		close(f.inbound)
		close(f.notices)
	})
	return nil
}

// fakeCouriers starts fakeCouriers and remembers them.
type fakeCouriers struct {
	mu        sync.Mutex
	started   []*fakeCourier
	dieOnSend int32 // for the first courier only
	// onStart and onSend, when set, run as each courier starts and sends
	// (a test's clock).
	onStart, onSend func()
}

func (fc *fakeCouriers) StartCourier(ctx context.Context) (ports.Courier, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.onStart != nil {
		fc.onStart()
	}
	c := newFakeCourier(len(fc.started) + 1)
	c.onSend = fc.onSend
	if len(fc.started) == 0 {
		c.dieOnSend = fc.dieOnSend
	}
	fc.started = append(fc.started, c)
	return c, nil
}

func (fc *fakeCouriers) get(i int) *fakeCourier {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.started[i]
}

func (fc *fakeCouriers) count() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.started)
}

// relayWorld is a Relay over gomock registry and liveness doubles and a
// fake couriers port; w.trans has no expectations (a relay never uses it).
func relayWorld(t *testing.T, fc ports.Couriers) (world, *app.Relay) {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithCouriers(fc))
	w.registry([]domain.Record{record(4652, idA, "proj-89"), record(5031, idB, "proj-89"), record(6000, idC, "solo")})
	r, err := app.StartRelay(context.Background(), w.svc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	return w, r
}

func TestRelaySendsOnOneCourierWithSendsRules(t *testing.T) {
	fc := &fakeCouriers{}
	_, r := relayWorld(t, fc)
	for i := range 3 {
		res, err := r.Send(context.Background(), app.SendRequest{Address: "solo", Text: fmt.Sprintf("t%d", i)})
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("c1-m%d-t%d", i+1, i), res.Receipt.MsgID)
		assert.Equal(t, domain.OutcomeQueued, res.Outcome)
		assert.Equal(t, idC, res.Target.ID())
	}
	assert.Equal(t, 1, fc.count(), "one courier for every send")
	// The refusals of Service.Send, before the courier is asked.
	for address, reason := range map[string]domain.Reason{"proj-89": domain.ReasonIdentityMismatch, "nobody": domain.ReasonNotLive} {
		_, err := r.Send(context.Background(), app.SendRequest{Address: address, Text: "x"})
		rf, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", address, err)
		assert.Equal(t, reason, rf.Reason, address)
	}
	_, err := r.Send(context.Background(), app.SendRequest{Address: "solo", Text: " "})
	rf, ok := domain.AsRefusal(err)
	require.True(t, ok)
	assert.Equal(t, domain.ReasonInvalidMessage, rf.Reason)
	assert.Equal(t, int32(3), fc.get(0).sends.Load(), "refused sends never reach the courier")
}

func TestRelayRestartsADeadCourierAndNeverDropsASend(t *testing.T) {
	fc := &fakeCouriers{dieOnSend: 2}
	_, r := relayWorld(t, fc)
	var outcomes []string
	for i := range 4 {
		res, err := r.Send(context.Background(), app.SendRequest{Address: "solo", Text: fmt.Sprintf("t%d", i)})
		if err != nil {
			rf, ok := domain.AsRefusal(err)
			require.True(t, ok, "send %d: %v", i, err)
			assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
			assert.Contains(t, rf.Detail, "is restarted")
			outcomes = append(outcomes, "refused")
			continue
		}
		outcomes = append(outcomes, res.Receipt.MsgID)
	}
	assert.Equal(t, []string{"c1-m1-t0", "refused", "c2-m1-t2", "c2-m2-t3"}, outcomes)
	assert.Equal(t, 2, fc.count())
	assert.True(t, fc.get(0).closed.Load(), "the dead courier was closed")
	assert.Equal(t, app.RelayStats{Starts: 2, Restarts: 1}, r.Stats())
}

// A courier that dies while no send runs is replaced on its own, so
// replies keep arriving; Inbound carries messages from either.
func TestRelayInboundAcrossARestart(t *testing.T) {
	fc := &fakeCouriers{}
	_, r := relayWorld(t, fc)
	at := time.Now()
	fc.get(0).inbound <- domain.NewInbound("uds:/s/1.sock", "one", "first", at)
	assert.Equal(t, "first", (<-r.Inbound()).Text)
	fc.get(0).die()
	require.Eventually(t, func() bool { return fc.count() == 2 }, 5*time.Second, 10*time.Millisecond, "restarted without a send")
	fc.get(1).inbound <- domain.NewInbound("uds:/s/2.sock", "two", "second", at)
	in := <-r.Inbound()
	assert.Equal(t, "second", in.Text)
	assert.Equal(t, "uds:/s/2.sock", in.From)
	require.NoError(t, r.Stop(context.Background()))
	_, open := <-r.Inbound()
	assert.False(t, open, "Inbound is closed once the relay stopped")
	assert.True(t, fc.get(1).closed.Load())
	_, err := r.Send(context.Background(), app.SendRequest{Address: "solo", Text: "late"})
	assert.ErrorIs(t, err, app.ErrRelayStopped)
}

func TestRelayNeedsCouriers(t *testing.T) {
	w := newWorld(t, "/cfg")
	_, err := app.StartRelay(context.Background(), w.svc)
	assert.ErrorIs(t, err, app.ErrNoCouriers)
}

// The fx module provides the Relay; the app's start starts its courier and
// its stop closes it.
func TestRelayFxLifecycle(t *testing.T) {
	fc := &fakeCouriers{}
	ctrl := gomock.NewController(t)
	reg, live := portsmock.NewMockRegistry(ctrl), portsmock.NewMockLiveness(ctrl)
	w := world{reg: reg, live: live}
	w.registry([]domain.Record{record(6000, idC, "solo")})
	var relay *app.Relay
	fxApp := fxtest.New(t, wiring.Module, fx.Supply(testConfig(t.TempDir(), "")),
		fx.Replace(fx.Annotate(ports.Registry(reg), fx.As(new(ports.Registry)))),
		fx.Replace(fx.Annotate(ports.Liveness(live), fx.As(new(ports.Liveness)))),
		fx.Decorate(func(ports.Couriers) ports.Couriers { return fc }),
		fx.Populate(&relay))
	fxApp.RequireStart()
	assert.Equal(t, 1, fc.count(), "OnStart started the courier")
	res, err := relay.Send(context.Background(), app.SendRequest{Address: "solo", Text: "hi"})
	require.NoError(t, err)
	assert.Equal(t, "c1-m1-hi", res.Receipt.MsgID)
	fxApp.RequireStop()
	assert.True(t, fc.get(0).closed.Load(), "OnStop closed the courier")
}

// The joined courier of HarnessCouriers is done as soon as a Send that its
// member died under returns, even while its forwarding is busy: a Relay
// checks Done right then to restart the courier and to say so in the
// refusal (under load the forwarding goroutine used to close Done only
// later, and the next send reused the dead courier).
func TestJoinedCourierIsDoneWhenASendDies(t *testing.T) {
	member := newFakeCourier(1)
	member.inbound = make(chan domain.Inbound, app.RelayInboundBuffer+2)
	member.dieOnSend = 1
	fc := &startOne{c: member}
	j, err := app.HarnessCouriers{domain.HarnessClaudeCode: fc}.StartCourier(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = j.Close()
		for range j.Inbound() { // unblock the forwarding
		}
	})
	// Nobody reads j's Inbound: its forwarding blocks once the buffer is full.
	for i := range app.RelayInboundBuffer + 2 {
		member.inbound <- domain.NewInbound("uds:/s/1.sock", "one", fmt.Sprint(i), time.Now())
	}
	require.Eventually(t, func() bool { return len(member.inbound) == 0 || len(j.Inbound()) == app.RelayInboundBuffer },
		5*time.Second, time.Millisecond, "the forwarding is blocked on a full buffer")

	target, err := domain.NewSession(domain.Entry{Record: record(6000, idC, "solo"), Verdict: domain.VerdictLive, Addressable: true})
	require.NoError(t, err)
	msg, err := domain.NewMessage("hi")
	require.NoError(t, err)
	_, err = j.Send(context.Background(), target, msg)
	require.Error(t, err)
	select {
	case <-j.Done():
	default:
		t.Fatal("the send's courier died, yet the joined courier is not done")
	}
}

// startOne is a ports.Couriers that starts c.
type startOne struct{ c *fakeCourier }

func (s *startOne) StartCourier(context.Context) (ports.Courier, error) { return s.c, nil }

// failingCouriers are couriers that never start.
type failingCouriers struct{ err error }

func (f failingCouriers) StartCourier(context.Context) (ports.Courier, error) { return nil, f.err }

// A relay starts when one harness's courier starts, and names the others,
// with why they did not (Unstarted; relay warns of them); when none
// starts, the relay does not start, with the first one's error.
func TestRelayUnstartedNamesTheCouriersThatDidNotStart(t *testing.T) {
	boom := errors.New("no claude program")
	ctrl := gomock.NewController(t)
	svc := app.New(portsmock.NewMockRegistry(ctrl), portsmock.NewMockLiveness(ctrl), portsmock.NewMockTransport(ctrl), "/cfg",
		app.WithCouriers(app.HarnessCouriers{domain.HarnessClaudeCode: failingCouriers{boom}, qwenregistry.Kind: &fakeCouriers{}}))
	r, err := app.StartRelay(context.Background(), svc)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Stop(context.Background())) }()
	assert.Equal(t, map[domain.Harness]error{domain.HarnessClaudeCode: boom}, r.Unstarted())

	svc = app.New(portsmock.NewMockRegistry(ctrl), portsmock.NewMockLiveness(ctrl), portsmock.NewMockTransport(ctrl), "/cfg",
		app.WithCouriers(app.HarnessCouriers{domain.HarnessClaudeCode: failingCouriers{boom}, qwenregistry.Kind: failingCouriers{errors.New("no room")}}))
	_, err = app.StartRelay(context.Background(), svc)
	assert.ErrorIs(t, err, boom)
}

// A relay says nothing of the courier of a harness that could not have
// had a session here (not installed, no state: issue 44): one person
// never uses it. Present, it is named; the primary always is.
func TestRelayUnstartedLeavesOutAbsentHarnesses(t *testing.T) {
	boom := errors.New("no Qwen Code home")
	for _, present := range []bool{false, true} {
		hs := app.NewHarnesses([]ports.Harness{missingHarness{}, homelessHarness{of: qwenregistry.Kind, present: present}})
		svc := app.New(hs.Registry(), noLiveness{}, hs.Router(""), "", app.WithHarnesses(hs),
			app.WithCouriers(app.HarnessCouriers{domain.HarnessClaudeCode: &fakeCouriers{}, qwenregistry.Kind: failingCouriers{boom}}))
		r, err := app.StartRelay(context.Background(), svc)
		require.NoError(t, err)
		want := map[domain.Harness]error{}
		if present {
			want[qwenregistry.Kind] = boom
		}
		assert.Equal(t, want, r.Unstarted(), "present: %v", present)
		require.NoError(t, r.Stop(context.Background()))
	}
}
