package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// SendEventsEnv is the variable a peerctl sending over ssh sets, to "1",
// on the far side's `send --json` command line (with `env`) to ask for
// its SendEvent lines: a far peerctl that does not know it prints its one
// receipt document as before, and one that does prints the events only
// when asked, so that a near peerctl that reads one document is never
// given lines it does not read.
const SendEventsEnv = "PEERCTL_SEND_EVENTS"

// SendSettledEnv is the variable a peerctl sending over ssh sets, to "1",
// on the far side's `send` command line (with `env`) for a query that
// asks for a settled target (SendQuery.Settled: a durable message): a far
// peerctl that knows it refuses a session still starting (not_addressable,
// nothing sent); an older one ignores it and sends as before.
const SendSettledEnv = "PEERCTL_SEND_SETTLED"

// The SendEvent kinds (docs/OUTPUT.md).
const (
	// SendHanded: the target's harness has the message; the wait begins.
	SendHanded = "handed"
	// SendConfirmation: the confirmation window after the hand-over ended.
	SendConfirmation = "confirmation"
	// SendTargetWaiting: the target was seen waiting on its user.
	SendTargetWaiting = "targetWaiting"
)

// SendEvent is one line a far side's `send --json` that waits (--wait,
// --await-reply) prints, when asked (SendEventsEnv), before its receipt
// document, as the moment happens: its wait told as it goes, as a send
// here tells it (docs/OUTPUT.md, "send's events"). Fields are only ever
// added; a near side skips a kind it does not know.
type SendEvent struct {
	// SendEvent is the kind: handed, confirmation, targetWaiting.
	SendEvent string `json:"sendEvent"`
	// Receipt (handed) is the receipt so far, as send prints it.
	Receipt *Receipt `json:"receipt,omitempty"`
	// Notes (handed) are the receipt's notes (stderr lines).
	Notes []string `json:"notes,omitempty"`
	// Reply (handed): the wait is for the target's reply, not for the end
	// of its turn.
	Reply bool `json:"reply,omitempty"`
	// LeftMs (handed) is how long the wait has left, in milliseconds
	// (a time left, not a clock time: the two machines' clocks may differ).
	LeftMs int64 `json:"leftMs,omitempty"`
	// Confirming (handed): the confirmation of the hand-over is still to
	// come (a confirmation event follows); the receipt is the transport's.
	Confirming bool `json:"confirming,omitempty"`
	// Lines (confirmation) say how the confirmation ended.
	Lines []string `json:"lines,omitempty"`
	// WaitingFor (targetWaiting) is what the target waits on ("" when its
	// record does not say).
	WaitingFor string `json:"waitingFor,omitempty"`
}

// SendEvents is told a far send's events as they arrive (SendEvent, read
// by ReadSendEvent), from the goroutine that reads the far side.
type SendEvents func(SendEvent)

type sendEventsKey struct{}

// WithSendEvents returns ctx asking the sends run under it on another
// machine for their events, told to f.
func WithSendEvents(ctx context.Context, f SendEvents) context.Context {
	return context.WithValue(ctx, sendEventsKey{}, f)
}

// SendEventsFrom is the SendEvents ctx carries (WithSendEvents), nil when
// none.
func SendEventsFrom(ctx context.Context) SendEvents {
	f, _ := ctx.Value(sendEventsKey{}).(SendEvents)
	return f
}

// ReadSendEvent reads one line of a far side's send as a SendEvent on
// dest: ok false when the line is not one (a JSON object with a
// "sendEvent" word: the receipt document begins there). A kind this build
// knows is read with exact keys; one it does not know is handed on with
// its kind alone, to be skipped. A handed event's receipt is given its
// host and its endpoint in the ssh:v1: form; one whose endpoint is not of
// that machine, or a known kind this build cannot read, is an error.
func ReadSendEvent(dest domain.Dest, line []byte) (ev SendEvent, ok bool, err error) {
	var kind struct {
		SendEvent string `json:"sendEvent"`
	}
	if json.Unmarshal(line, &kind) != nil || kind.SendEvent == "" {
		return SendEvent{}, false, nil
	}
	switch kind.SendEvent {
	case SendHanded, SendConfirmation, SendTargetWaiting:
	default:
		return SendEvent{SendEvent: kind.SendEvent}, true, nil
	}
	if err := jsonexact.Exact(line, &ev); err != nil {
		return SendEvent{}, true, fmt.Errorf("peerctl on %s told its send's %q in words this build cannot read: %s", dest, kind.SendEvent, Safe(Clip(err.Error(), 200)))
	}
	if ev.Receipt != nil {
		ep, err := HostEndpoint(dest, ev.Receipt.Endpoint)
		if err != nil {
			return SendEvent{}, true, fmt.Errorf("peerctl on %s told a hand-over: %w", dest, err)
		}
		ev.Receipt.Host, ev.Receipt.Endpoint = dest.String(), ep
	}
	return ev, true, nil
}

// Left is the event's LeftMs as a duration.
func (ev SendEvent) Left() time.Duration { return time.Duration(ev.LeftMs) * time.Millisecond }
