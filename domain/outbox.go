package domain

import (
	"fmt"
	"time"
)

// OutboxState is where a durable message stands (peerctl serve's outbox,
// docs/SERVE.md). The life of a message is stored → delivering →
// delivered → taken_up → replied; it can end instead as held, refused,
// expired, cancelled or outcome_unknown. A message the trust policy
// holds starts as awaiting_approval instead: a person approves it (then
// stored, as any durable message) or denies it (denied). Each change is kept in the
// message's history with its time and reason.
type OutboxState int

// The outbox states. A message is due for an attempt only in
// OutboxStored; OutboxDelivering marks an attempt under way (one that a
// crash interrupted is checked before anything else happens to it).
const (
	// OutboxStored: kept, waiting for its target (a next attempt is due
	// at a time, with backoff).
	OutboxStored OutboxState = iota + 1
	// OutboxDelivering: an attempt is under way (the text may be with the
	// harness).
	OutboxDelivering
	// OutboxDelivered: the harness's receipt came (msg_id, delivery_status).
	OutboxDelivered
	// OutboxTakenUp: the target's transcript shows it took the message up.
	OutboxTakenUp
	// OutboxReplied: the target replied (a send that awaited a reply).
	OutboxReplied
	// OutboxHeld: the harness holds the message (its own receipt said held).
	OutboxHeld
	// OutboxRefused: the harness or peerctl refused it for good (the text,
	// an unsupported harness): retrying cannot help.
	OutboxRefused
	// OutboxExpired: its time to live passed before it could be delivered;
	// the reason is the last attempt's.
	OutboxExpired
	// OutboxCancelled: `peerctl outbox cancel` took it back before delivery.
	OutboxCancelled
	// OutboxOutcomeUnknown: an attempt ended after the hand-over began and
	// the target's transcript or receipt cannot say whether it arrived;
	// it waits for `peerctl outbox retry` and is never re-sent on its own.
	OutboxOutcomeUnknown
	// OutboxAwaitingApproval: a hold rule of the trust policy keeps it
	// for a person (`peerctl outbox approve` stores it for delivery,
	// `outbox deny` ends it); nothing was handed to the target.
	OutboxAwaitingApproval
	// OutboxDenied: `peerctl outbox deny` ended a message that awaited
	// approval; it was never sent.
	OutboxDenied
)

var outboxWords = map[OutboxState]string{
	OutboxStored: "stored", OutboxDelivering: "delivering", OutboxDelivered: "delivered",
	OutboxTakenUp: "taken_up", OutboxReplied: "replied", OutboxHeld: "held", OutboxRefused: "refused",
	OutboxExpired: "expired", OutboxCancelled: "cancelled", OutboxOutcomeUnknown: "outcome_unknown",
	OutboxAwaitingApproval: "awaiting_approval", OutboxDenied: "denied",
}

// OutboxStates lists every state in life order.
func OutboxStates() []OutboxState {
	return []OutboxState{OutboxStored, OutboxDelivering, OutboxDelivered, OutboxTakenUp, OutboxReplied,
		OutboxHeld, OutboxRefused, OutboxExpired, OutboxCancelled, OutboxOutcomeUnknown, OutboxAwaitingApproval, OutboxDenied}
}

// String is the state's wire word ("stored", "outcome_unknown", ...).
func (s OutboxState) String() string {
	if w, ok := outboxWords[s]; ok {
		return w
	}
	return fmt.Sprintf("OutboxState(%d)", int(s))
}

// ParseOutboxState maps a wire word back to its state; an unknown word is
// an error naming it.
func ParseOutboxState(word string) (OutboxState, error) {
	for s, w := range outboxWords {
		if w == word {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown outbox state %q", word)
}

// Pending reports whether the message is still to be delivered (stored,
// or an attempt under way): cancel and expiry apply to these only.
func (s OutboxState) Pending() bool { return s == OutboxStored || s == OutboxDelivering }

// Handed reports whether the message reached the target harness (delivered
// and after, or held).
func (s OutboxState) Handed() bool {
	return s == OutboxDelivered || s == OutboxTakenUp || s == OutboxReplied || s == OutboxHeld
}

// Finished reports whether nothing more will happen to the message on its
// own: handed over (delivered, taken_up, replied, held) or ended without it
// (refused, expired, cancelled, denied). Pending messages, outcome_unknown
// and awaiting_approval (they wait for a person) are not finished. A finished message may be pruned
// after the outbox's retention period.
func (s OutboxState) Finished() bool {
	return s.Handed() || s == OutboxRefused || s == OutboxExpired || s == OutboxCancelled || s == OutboxDenied
}

// Retryable reports whether a send refused for r may succeed later with
// no change to the message: the target not live or not addressable yet, a
// name several live sessions share now, a transport that could not start
// or a host that does not answer. Every other reason (the text, the
// harness, an uncertain hand-over) is not retried on its own.
func Retryable(r Reason) bool {
	switch r {
	case ReasonNotLive, ReasonNotAddressable, ReasonIdentityMismatch, ReasonDeliveryFailed, ReasonHostUnreachable:
		return true
	}
	return false
}

// Backoff is the wait before attempt n+1 after n failed attempts (n ≥ 1):
// 2 s doubled per attempt, at most max. n < 1 counts as 1.
func Backoff(n int, max time.Duration) time.Duration {
	d := 2 * time.Second
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
