package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// traced records a send's trace hooks, in order.
type traced struct {
	mu       sync.Mutex
	events   []string
	receipt  wire.Receipt
	awaiting app.Awaiting
	lines    []string // the Confirmation's
}

func (tr *traced) trace(then func()) *app.SendTrace {
	return &app.SendTrace{
		Handed: func(sent wire.Sent, w app.Awaiting) {
			tr.mu.Lock()
			tr.events, tr.receipt, tr.awaiting = append(tr.events, "handed"), sent.Receipt, w
			tr.mu.Unlock()
			if then != nil {
				then()
			}
		},
		Confirmation: func(lines []string) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.events = append(tr.events, "confirmation")
			tr.lines = append(tr.lines, lines...)
		},
		TargetWaiting: func(what string) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.events = append(tr.events, "waiting: "+what)
		},
	}
}

func (tr *traced) got() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.events...)
}

// A send that waits tells its receipt before the wait begins: here the
// session ends only once the receipt was told, and the wait ends on that.
// A session that stops on a dialog meanwhile is told once, however often
// its record is read.
func TestSendTraceTellsTheReceiptBeforeTheWait(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			f := startFake(t, cfg, idA, "proj-89")
			f.backdate(time.Minute)
			var tr traced
			ended := make(chan struct{})
			trace := tr.trace(func() {
				go func() {
					defer close(ended)
					f.setStatus("waiting:dialog open")
					f.setStatus("waiting:dialog open")
					for len(tr.got()) < 3 {
						time.Sleep(5 * time.Millisecond)
					}
					f.exit()
				}()
			})
			tp := &cueTransport{outcome: "posted", cue: func(s string) { f.enqueue(s, time.Now()) }}
			ctx, cancel := context.WithTimeout(app.WithSendTrace(context.Background(), trace), 2*within)
			defer cancel()
			res, err := newService(cfg, tp, v).Send(ctx, app.SendRequest{Address: "proj-89", Text: "go", ConfirmOptions: app.ConfirmOptions{Wait: time.Hour}})
			require.NoError(t, err)
			<-ended
			assert.Equal(t, domain.WaitExited, res.WaitEnd, "ended by the exit that followed the receipt; note: %s", res.WaitNote)
			assert.NotContains(t, res.WaitNote, "ended", "printed as \"the session ended (NOTE)\": the end said once")
			assert.Equal(t, []string{"handed", "confirmation", "waiting: dialog open"}, tr.got())
			assert.Equal(t, "posted", tr.receipt.Outcome, "the transport's word, told before the confirmation")
			assert.Nil(t, tr.receipt.Wait, "told before the wait")
			assert.False(t, tr.awaiting.Reply)
			assert.Equal(t, "proj-89", tr.awaiting.Target)
			assert.False(t, tr.awaiting.Until.IsZero())
		})
	}
}

// The hand-over is told before the confirmation is watched: here the
// transcript shows the text only once the receipt was told (with a
// confirmation window that outlasts the test), and the confirmation is
// told next, within the wait that counts from the hand-over.
func TestSendTraceTellsTheHandOverBeforeTheConfirmation(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			f := startFake(t, cfg, idA, "proj-89")
			f.backdate(time.Minute)
			var tr traced
			ended := make(chan struct{})
			trace := tr.trace(func() {
				go func() {
					defer close(ended)
					f.enqueue("go", time.Now())
					for len(tr.got()) < 2 {
						time.Sleep(5 * time.Millisecond)
					}
					f.exit()
				}()
			})
			ctx, cancel := context.WithTimeout(app.WithSendTrace(context.Background(), trace), 2*within)
			defer cancel()
			res, err := newService(cfg, &cueTransport{outcome: "posted"}, v).Send(ctx, app.SendRequest{Address: "proj-89", Text: "go",
				ConfirmOptions: app.ConfirmOptions{Wait: time.Hour, ConfirmTimeout: time.Hour}})
			require.NoError(t, err)
			<-ended
			assert.True(t, res.Confirmed, res.ConfirmNote)
			assert.Equal(t, domain.WaitExited, res.WaitEnd, "note: %s", res.WaitNote)
			assert.Equal(t, []string{"handed", "confirmation"}, tr.got())
			require.Len(t, tr.lines, 1)
			assert.Contains(t, tr.lines[0], "peerctl: confirmed: its transcript shows the text")
		})
	}
}

// A reply wait tells its receipt before it listens, and a target waiting
// on its user: told once, and named in the no_reply refusal.
func TestSendTraceAwaitReply(t *testing.T) {
	svc, _ := awaitWorldWith(t, func(r *domain.Record) { r.Status, r.WaitingFor = domain.StatusWaiting, "permission prompt" })
	var tr traced
	res, err := svc.Send(app.WithSendTrace(context.Background(), tr.trace(nil)), app.SendRequest{Address: "solo", Text: "question",
		AwaitReply: 300 * time.Millisecond, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Contains(t, r.Detail, "; the session was last seen waiting (permission prompt): it waits on its user; answer it there")
	assert.Equal(t, []string{"handed", "waiting: permission prompt"}, tr.got())
	assert.True(t, tr.awaiting.Reply)
	assert.Equal(t, res.Receipt.MsgID, tr.receipt.MsgID)
}

// TestAwaitingSaysTheTimeLeft: the wait line's time left is whole seconds
// rounded up, and never negative when the wait's end has passed (a
// confirmation that took longer than the wait: "waiting up to -7s").
func TestAwaitingSaysTheTimeLeft(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	w := app.Awaiting{Until: now.Add(2*time.Minute - 400*time.Millisecond), Reply: true, Target: "proj-89"}
	assert.Equal(t, 2*time.Minute, w.Left(now))
	assert.Contains(t, w.What(now), "waiting up to 2m0s (until 04:01:59 UTC)")
	late := app.Awaiting{Until: now.Add(-7 * time.Second), Reply: true, Target: "proj-89"}
	assert.Equal(t, time.Duration(0), late.Left(now))
	assert.Contains(t, late.What(now), "waiting up to 0s")
}

// A trace asks the sends run on other machines under it for their events
// (wire.SendEventsFrom) and is told each as its own moments are: the
// receipt with the wait counted from now, a kind this build does not know
// skipped.
func TestSendTraceIsToldAFarSidesEvents(t *testing.T) {
	tr := &traced{}
	events := wire.SendEventsFrom(app.WithSendTrace(context.Background(), tr.trace(nil)))
	require.NotNil(t, events, "a far send under a trace asks for its events")
	before := time.Now()
	events(wire.SendEvent{SendEvent: wire.SendHanded, Receipt: &wire.Receipt{Outcome: "posted", Name: "quiet", Host: "box"}, Reply: true, LeftMs: 120_000, Confirming: true})
	events(wire.SendEvent{SendEvent: "someday"})
	events(wire.SendEvent{SendEvent: wire.SendHanded}) // no receipt: nothing to tell
	events(wire.SendEvent{SendEvent: wire.SendConfirmation, Lines: []string{"peerctl: confirmed: seen"}})
	events(wire.SendEvent{SendEvent: wire.SendTargetWaiting, WaitingFor: "dialog open"})

	assert.Equal(t, []string{"handed", "confirmation", "waiting: dialog open"}, tr.got())
	assert.Equal(t, "box", tr.receipt.Host)
	assert.Equal(t, app.Awaiting{Reply: true, Target: "quiet", Until: tr.awaiting.Until, Confirming: true}, tr.awaiting)
	assert.WithinRange(t, tr.awaiting.Until, before.Add(2*time.Minute), time.Now().Add(2*time.Minute))
	assert.Equal(t, []string{"peerctl: confirmed: seen"}, tr.lines)
	assert.Nil(t, wire.SendEventsFrom(context.Background()), "none without a trace")
}

// startingTransport starts a program for each send (ports.Starting), as
// Claude Code's courier does; each Deliver is recorded in events.
type startingTransport struct {
	*fakeTransport
	events *[]string
}

func (s startingTransport) Starts() string { return "claude -p" }

func (s startingTransport) Deliver(ctx context.Context, to domain.Session, m domain.Message) (domain.Receipt, error) {
	*s.events = append(*s.events, "delivered")
	return s.fakeTransport.Deliver(ctx, to, m)
}

// A send whose transport starts a program tells that the courier starts,
// with the target and the program, and that it has started once the
// transport handed the message over; a transport that starts nothing tells
// nothing of it.
func TestSendTraceTellsTheCourierStart(t *testing.T) {
	for _, starts := range []bool{true, false} {
		w := newWorld(t, "/cfg")
		w.registry([]domain.Record{record(6000, idC, "solo")})
		var events []string
		var tr ports.Transport = &fakeTransport{}
		if starts {
			tr = startingTransport{fakeTransport: &fakeTransport{}, events: &events}
		}
		svc := app.New(w.reg, w.live, tr, "/cfg")
		trace := &app.SendTrace{CourierStarting: func(target, program string) func() {
			events = append(events, "starting "+target+" by "+program)
			return func() { events = append(events, "started") }
		}}
		_, err := svc.Send(app.WithSendTrace(context.Background(), trace), app.SendRequest{Address: "solo", Text: "hi",
			ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
		require.NoError(t, err)
		if starts {
			assert.Equal(t, []string{"starting solo by claude -p", "delivered", "started"}, events)
		} else {
			assert.Empty(t, events)
		}
	}
}
