package cli

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/waitline"
	"github.com/peerctl/peerctl/ports/wire"
)

// waitTalk tells a person what a send that waits is doing (app.SendTrace):
// the receipt text as soon as the hand-over is known (where send prints
// it: stdout, stderr when the reply takes stdout), then on stderr a line
// that it waits, the time waited on a terminal, and a target found
// waiting on its user. A send that peerctl serve carries tells the same
// through it (serve.Talk: the service's trace replayed on this one). Nil
// (with --json, or without a wait) it does nothing: the receipt comes at
// the end, as one document.
type waitTalk struct {
	io      *iostreams
	awaited bool

	mu   sync.Mutex
	told []string // the notes printed with the receipt; nil: not printed
	name string
	line *waitline.Line
}

// talkWhileWaiting is the waitTalk of a send with these flags on io.
func talkWhileWaiting(io *iostreams, asJSON bool, wait, await time.Duration) *waitTalk {
	if asJSON || wait <= 0 && await <= 0 {
		return nil
	}
	return &waitTalk{io: io, awaited: await > 0}
}

// context is ctx carrying the talk's trace.
func (t *waitTalk) context(ctx context.Context) context.Context {
	if t == nil {
		return ctx
	}
	return app.WithSendTrace(ctx, &app.SendTrace{Handed: t.handed, Confirmation: t.confirmation, TargetWaiting: t.targetWaiting})
}

// sendEvents is the trace of a send run over ssh by a peerctl that asked
// for its events (wire.SendEventsEnv): each moment one wire.SendEvent line
// on stdout, as it happens, before the receipt document; a send that
// peerctl serve carries tells it the service's moments (serve.Talk).
func sendEvents(io *iostreams) *app.SendTrace {
	var mu sync.Mutex
	emit := func(ev wire.SendEvent) {
		mu.Lock()
		defer mu.Unlock()
		_ = wire.EncodeJSON(io.out, ev, "", false)
	}
	return &app.SendTrace{
		Handed: func(sent wire.Sent, w app.Awaiting) {
			r := sent.Receipt
			emit(wire.SendEvent{SendEvent: wire.SendHanded, Receipt: &r, Notes: sent.Notes, Reply: w.Reply, LeftMs: max(1, time.Until(w.Until).Milliseconds()), Confirming: w.Confirming})
		},
		Confirmation: func(lines []string) { emit(wire.SendEvent{SendEvent: wire.SendConfirmation, Lines: lines}) },
		TargetWaiting: func(waitingFor string) {
			emit(wire.SendEvent{SendEvent: wire.SendTargetWaiting, WaitingFor: waitingFor})
		},
	}
}

func (t *waitTalk) handed(sent wire.Sent, w app.Awaiting) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.io.out
	if t.awaited {
		out = t.io.errOut
	}
	if r := sent.Receipt; w.Confirming && r.Plan == nil && !wire.Held(r) {
		fmt.Fprintln(out, app.HandedLine(r))
	} else {
		printReceiptText(out, r)
	}
	passLines(t.io.errOut, sent.Notes)
	t.told, t.name = append([]string{}, sent.Notes...), w.Target
	now := time.Now()
	t.line = waitline.Start(t.io.errOut, liveLines(t.io), safe(w.Head(now)), w.Left(now))
}

// liveLines reports whether io's stderr takes lines rewritten in place:
// a terminal, and not TERM=dumb.
func liveLines(io *iostreams) bool {
	return io.terminal(io.errOut) && io.getenv("TERM") != "dumb"
}

// courierTalk is ctx whose send tells, on a terminal and without --json,
// while its courier starts (app.SendTrace.CourierStarting: a claude -p can
// take seconds on a loaded machine), a live line on stderr saying so and
// for how long, cleared once the courier has handed the message over
// (waitline.Live): nothing when that is sooner than a second, nothing at
// all when stderr is not a terminal. A trace ctx carries already (a send
// that waits) is kept, with this hook added.
func courierTalk(ctx context.Context, io *iostreams, asJSON bool) context.Context {
	if asJSON || !liveLines(io) {
		return ctx
	}
	var tr app.SendTrace
	if t := app.SendTraceFrom(ctx); t != nil {
		tr = *t
	}
	tr.CourierStarting = func(target, program string) func() {
		return waitline.Live(io.errOut, safe(fmt.Sprintf("starting the courier (%s) that hands the message to %q", program, target))).Stop
	}
	return app.WithSendTrace(ctx, &tr)
}

// confirmation says how the confirmation that followed the hand-over
// ended, above the wait's line; the lines are not printed again at the end.
func (t *waitTalk) confirmation(lines []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range lines {
		t.line.Say(safe(l))
	}
	t.told = append(t.told, lines...)
}

func (t *waitTalk) targetWaiting(waitingFor string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line.Say(safe(app.TargetWaitingNote(t.name, waitingFor)))
}

// stop ends the live line (the send has ended).
func (t *waitTalk) stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line.Stop()
}

// printed returns the notes printed with the receipt at the hand-over,
// and whether it was printed.
func (t *waitTalk) printed() ([]string, bool) {
	if t == nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.told, t.told != nil
}

// notTold are the notes of notes that were not printed already.
func notTold(notes, told []string) []string {
	var out []string
	for _, n := range notes {
		if !slices.Contains(told, n) {
			out = append(out, n)
		}
	}
	return out
}
