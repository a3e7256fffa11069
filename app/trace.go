package app

import (
	"context"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// SendTrace hooks the moments of a send that waits after its hand-over
// (SendRequest.Wait, SendRequest.AwaitReply), as net/http/httptrace's
// ClientTrace hooks a request's: carried by the send's context
// (WithSendTrace), so that a command can tell a person what goes on while
// the send's result is still to come. Nil hooks are skipped; each hook is
// called at most once per send, from the send's goroutine or its wait's.
type SendTrace struct {
	// Handed is called when the target harness has the message and the
	// wait is about to begin: sent is the receipt so far as `send` would
	// print it (with its notes: an unconfirmed or held outcome), w what is
	// awaited and until when.
	Handed func(sent wire.Sent, w Awaiting)
	// Confirmation is called when the confirmation window that follows a
	// hand-over told to Handed ends, with the lines that say how it ended
	// ("peerctl: confirmed: ..." or the warning that it was not), during
	// the wait that counts from the hand-over.
	Confirmation func(lines []string)
	// CourierStarting is called when the send starts its courier (a
	// ports.Starting: Claude Code's claude -p), which can take seconds,
	// with the target's name and the program started; the func it
	// returns (nil: none) is called once the courier has handed the
	// message over or failed to. A send that waits calls it before
	// Handed.
	CourierStarting func(target, program string) (started func())
	// TargetWaiting is called the first time the wait sees the target
	// waiting on its user (domain.StatusWaiting: a dialog, a permission
	// prompt), with what it waits on ("" when its record does not say).
	TargetWaiting func(waitingFor string)
}

// Awaiting is what a send waits for after its hand-over.
type Awaiting struct {
	// Reply: the target's reply (AwaitReply); else the end of the turn on
	// the message (Wait).
	Reply bool
	// Target is the target's name.
	Target string
	// Until is when the wait gives up.
	Until time.Time
	// Confirming: the confirmation of the hand-over is still to come
	// (SendTrace.Confirmation tells how it ended); the receipt so far is
	// the transport's own (HandedLine).
	Confirming bool
}

type traceKey struct{}

// WithSendTrace returns ctx carrying t for the sends run under it. A send
// run on another machine under it is asked for its events
// (wire.WithSendEvents), told to t as they arrive (tellFar).
func WithSendTrace(ctx context.Context, t *SendTrace) context.Context {
	return wire.WithSendEvents(context.WithValue(ctx, traceKey{}, t), t.tellFar)
}

// tellFar tells t what a far side's send told (wire.SendEvent) as the
// moments of a send here are told: a hand-over's wait counts from now for
// the time the far side said it had left. A kind this build does not
// know, or a hand-over without its receipt, is skipped.
func (t *SendTrace) tellFar(ev wire.SendEvent) {
	switch {
	case t == nil:
	case ev.SendEvent == wire.SendHanded && ev.Receipt != nil && t.Handed != nil:
		t.Handed(wire.Sent{Receipt: *ev.Receipt, Notes: ev.Notes},
			Awaiting{Reply: ev.Reply, Target: ev.Receipt.Name, Until: time.Now().Add(ev.Left()), Confirming: ev.Confirming})
	case ev.SendEvent == wire.SendConfirmation && t.Confirmation != nil:
		t.Confirmation(ev.Lines)
	case ev.SendEvent == wire.SendTargetWaiting && t.TargetWaiting != nil:
		t.TargetWaiting(ev.WaitingFor)
	}
}

// SendTraceFrom is the SendTrace ctx carries (WithSendTrace), nil when none.
func SendTraceFrom(ctx context.Context) *SendTrace {
	t, _ := ctx.Value(traceKey{}).(*SendTrace)
	return t
}

// traceOf is ctx's SendTrace, a SendTrace with no hooks when none.
func traceOf(ctx context.Context) *SendTrace {
	if t := SendTraceFrom(ctx); t != nil {
		return t
	}
	return &SendTrace{}
}

// handed calls t.Handed with res as its receipt so far; confirming: the
// confirmation is still to come (the receipt is the transport's, without
// notes).
func (t *SendTrace) handed(res SendResult, w Awaiting, confirming bool) {
	if t.Handed == nil {
		return
	}
	sent, _ := Sent(res, nil, w.Reply)
	if confirming {
		sent.Notes = nil
	}
	w.Confirming = confirming
	t.Handed(sent, w)
}

// courierStarting calls t.CourierStarting when starter starts a program
// for the send to target (ports.Starting), and returns what to call once
// the courier has handed the message over or failed to.
func (t *SendTrace) courierStarting(starter any, target domain.Session) (started func()) {
	st, ok := starter.(ports.Starting)
	if !ok || t.CourierStarting == nil {
		return func() {}
	}
	if started = t.CourierStarting(target.Name(), st.Starts()); started == nil {
		return func() {}
	}
	return started
}

// confirmation calls t.Confirmation with what the confirmation of res came
// to: ConfirmedLine, or its unconfirmed notes.
func (t *SendTrace) confirmation(res SendResult) {
	if t.Confirmation == nil {
		return
	}
	lines := unconfirmedNotes(res)
	if res.Confirmed {
		lines = []string{ConfirmedLine(res)}
	}
	t.Confirmation(lines)
}

// ConfirmedLine says that res's confirmation came, e.g. `peerctl:
// confirmed: its transcript shows the text in the session's queue (seen in
// 1.2s)`.
func ConfirmedLine(res SendResult) string {
	return fmt.Sprintf("peerctl: confirmed: its transcript shows the text in the session's queue (seen in %s)", res.ConfirmElapsed.Round(time.Millisecond))
}

// waitingSeen tells a trace, once, that the target is waiting on its user,
// and remembers what it last saw of that for the wait's ending.
type waitingSeen struct {
	trace *SendTrace
	told  bool
	// last is the target's status as last read, waitingFor what it
	// waited on then.
	last       domain.Status
	waitingFor string
}

// see takes in the target's record as read now.
func (w *waitingSeen) see(r domain.Record) {
	w.last, w.waitingFor = r.Status, r.WaitingFor
	if r.Status != domain.StatusWaiting || w.told {
		return
	}
	w.told = true
	if w.trace.TargetWaiting != nil {
		w.trace.TargetWaiting(r.WaitingFor)
	}
}

// What says what the send now waits for and until when (UTC), e.g.
// `waiting up to 2m0s (until 18:12:05 UTC) for "proj-89" to reply`. The
// time left is in whole seconds, rounded up (a wait of 2m begun a moment
// ago is "up to 2m0s"), and never below 0s.
func (w Awaiting) What(now time.Time) string {
	what := "for the turn on the message to end"
	if w.Reply {
		what = fmt.Sprintf("for %q to reply", w.Target)
	}
	return fmt.Sprintf("waiting up to %s (until %s UTC) %s", w.Left(now), w.Until.UTC().Format(time.TimeOnly), what)
}

// Left is the time the wait has left at now, in whole seconds rounded up,
// never below 0.
func (w Awaiting) Left(now time.Time) time.Duration {
	return max(0, w.Until.Sub(now)+time.Second-1).Truncate(time.Second)
}

// Head is the line that tells a person on a terminal what the send now
// waits for (What) and what Ctrl-C does.
func (w Awaiting) Head(now time.Time) string {
	return "peerctl: " + w.What(now) + "; Ctrl-C stops the wait, not the message, which was handed over"
}

// TargetWaitingNote is the line that tells a person the target waits on its
// user (SendTrace.TargetWaiting): it takes nothing up until someone
// answers it there.
func TargetWaitingNote(name, waitingFor string) string {
	return fmt.Sprintf("peerctl: note: %q is %s: it waits on its user and takes nothing up until someone answers it there",
		name, domain.StatusText(domain.StatusWaiting.String(), waitingFor))
}
