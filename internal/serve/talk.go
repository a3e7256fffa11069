package serve

import (
	"context"
	"sync"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports/wire"
)

// Talk is one moment of a send that waits after its hand-over, as the
// service's send saw it (app.SendTrace): exactly one field is set. The
// client replays it on its own trace (Tell), so that a send through the
// service tells a person what a send made here would, when it happens.
type Talk struct {
	// Handed: the target's harness has the message and the wait begins
	// (app.SendTrace.Handed).
	Handed *Handed `json:"handed,omitempty"`
	// Confirmation: the lines that say how the confirmation after the
	// hand-over ended (app.SendTrace.Confirmation).
	Confirmation []string `json:"confirmation,omitempty"`
	// TargetWaiting: the wait saw the target waiting on its user
	// (app.SendTrace.TargetWaiting).
	TargetWaiting *TargetWaiting `json:"targetWaiting,omitempty"`
}

// Handed is the hand-over of a send that waits: the receipt so far, as
// send prints it (its durations and notes), and what is awaited.
type Handed struct {
	Sent wire.Sent `json:"sent"`
	// Reply: the wait is for a reply (--await-reply), else for the end of
	// the turn on the message (--wait).
	Reply bool `json:"reply,omitempty"`
	// Target is the target's name (exact: base64); Until when the wait
	// gives up (RFC 3339, UTC).
	Target []byte    `json:"target,omitempty"`
	Until  time.Time `json:"until"`
	// Confirming: the confirmation is still to come (app.Awaiting).
	Confirming bool `json:"confirming,omitempty"`
}

// TargetWaiting is what the target waits on (exact: base64; empty when
// its record does not say).
type TargetWaiting struct {
	For []byte `json:"for,omitempty"`
}

// talking is ctx carrying a trace that writes each moment of the sends
// run under it as a Talk line (say); ended stops it, so that nothing is
// said after the final line.
func talking(ctx context.Context, say func(Answer)) (_ context.Context, ended func()) {
	var mu sync.Mutex
	done := false
	tell := func(t Talk) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			say(Answer{Talk: &t})
		}
	}
	tr := &app.SendTrace{
		Handed: func(sent wire.Sent, w app.Awaiting) {
			tell(Talk{Handed: &Handed{Sent: sent, Reply: w.Reply, Target: []byte(w.Target), Until: w.Until.UTC(), Confirming: w.Confirming}})
		},
		Confirmation:  func(lines []string) { tell(Talk{Confirmation: lines}) },
		TargetWaiting: func(waitingFor string) { tell(Talk{TargetWaiting: &TargetWaiting{For: []byte(waitingFor)}}) },
	}
	return app.WithSendTrace(ctx, tr), func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
	}
}

// Tell replays t on tr (nil: nothing). A hand-over's receipt gets the
// outbox message the service said it stored (stored, nil when none).
func (t *Talk) Tell(tr *app.SendTrace, stored *Ref) {
	switch {
	case tr == nil:
	case t.Handed != nil && tr.Handed != nil:
		sent := t.Handed.Sent
		if stored != nil {
			sent.Receipt.Outbox = stored.OutboxRef()
		}
		tr.Handed(sent, app.Awaiting{Reply: t.Handed.Reply, Target: string(t.Handed.Target), Until: t.Handed.Until, Confirming: t.Handed.Confirming})
	case t.Confirmation != nil && tr.Confirmation != nil:
		tr.Confirmation(t.Confirmation)
	case t.TargetWaiting != nil && tr.TargetWaiting != nil:
		tr.TargetWaiting(string(t.TargetWaiting.For))
	}
}
