package domain

import (
	"fmt"
	"time"
)

// Outcome is how far a send is known to have got. The set is closed; its
// String words are the "outcome" of `send --json` and never change.
type Outcome int

// The outcomes, weakest proof first.
const (
	OutcomeUnknown Outcome = iota
	// OutcomePosted: the transport accepted the text (the inbox socket
	// read the frame) but the target's transcript has not shown it.
	OutcomePosted
	// OutcomeQueued: Claude Code's SendMessage (the courier) put the text
	// in the target's inbox (success true, a msg_id), and neither a notice
	// nor the target's transcript has said more yet.
	OutcomeQueued
	// OutcomeHeld: the target holds the text: Claude Code's "[Cross-session
	// delivery notice] … was held by that session", or a Qwen Code receipt
	// with status "held" (parked for its user to accept or deny with
	// /peers). It may be released later.
	OutcomeHeld
	// OutcomeRefused: the target refused the text ("… was refused"); a
	// send ending so is a ReasonDeliveryFailed refusal.
	OutcomeRefused
	// OutcomeDelivered: the target's own transcript holds a queue
	// "enqueue" line with exactly the text, stamped after the send began.
	OutcomeDelivered
)

var outcomeWords = []string{"unknown", "posted", "queued", "held", "refused", "delivered"}

// String returns "posted", "queued", "held", "refused", "delivered" (or "unknown").
func (o Outcome) String() string {
	if int(o) >= 0 && int(o) < len(outcomeWords) {
		return outcomeWords[o]
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// ParseOutcome maps a receipt's outcome word (Receipt.Outcome) to its
// Outcome; an unknown word is OutcomeUnknown.
func ParseOutcome(word string) Outcome {
	for i, w := range outcomeWords {
		if w == word {
			return Outcome(i)
		}
	}
	return OutcomeUnknown
}

// Enqueued is one queue "enqueue" line of a session's transcript, the
// proof that the session queued a message. Claude Code 2.1.328 writes, on
// one line of <config dir>/projects/<slug>/<sessionId>.jsonl:
//
//	{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-30T08:56:53.642Z","sessionId":"…","content":"<text exactly>"}
//
// when a socket post (or a peer's SendMessage) reaches the session. When
// the session takes the message up (at once when idle; when busy, only
// after the turns ahead of it) it writes a "dequeue" line (no content) and,
// as the turn on it begins, a "user" line:
//
//	{"type":"user","timestamp":"…","origin":{"kind":"peer","from":"unknown",…},"message":{"role":"user","content":"Another Claude session sent a message:\n<text>\n\n…"},…}
//
// Measured: the record's status turns "busy" a few tens of milliseconds
// before that user line's timestamp, and the previous turn's "idle" comes
// before it; lines are not always appended in timestamp order. A message
// that arrives while the session is still starting is held and enqueued
// (and stamped) only when released.
type Enqueued struct {
	// Path is the transcript file; Offset the line's byte offset in it.
	Path   string
	Offset int64
	// At is the line's "timestamp" (millisecond precision, UTC).
	At time.Time
	// SessionID is the line's "sessionId".
	SessionID string
}

// EnqueuedAfter reports whether a line stamped at is not before since,
// compared at the line's millisecond precision (since is truncated to the
// millisecond, so a line stamped in the very millisecond the send began
// counts).
func EnqueuedAfter(at, since time.Time) bool {
	return !at.Before(since.Truncate(time.Millisecond))
}

// WaitEnd is how `send --wait` ended. The set is closed; String gives the
// stable word used in text and JSON.
type WaitEnd int

// The wait endings.
const (
	WaitNone WaitEnd = iota
	// WaitIdle: the session went busy after the send and is idle again
	// (or its record's status was rewritten to idle after the send began).
	WaitIdle
	// WaitExited: the session ended (record removed, or its pid ended).
	WaitExited
	// WaitTimeout: the deadline passed first.
	WaitTimeout
	// WaitInterrupted: the wait was cut short (Ctrl-C, SIGTERM or SIGHUP,
	// or the caller's context) before any of the above.
	WaitInterrupted
	// WaitFailed: the wait could not go on (the registry could not be
	// read); the note says why.
	WaitFailed
)

var waitWords = []string{"none", "idle", "exited", "timeout", "interrupted", "failed"}

// String returns "idle", "exited", "timeout", "interrupted", "failed" (or
// "none").
func (w WaitEnd) String() string {
	if int(w) >= 0 && int(w) < len(waitWords) {
		return waitWords[w]
	}
	return fmt.Sprintf("wait(%d)", int(w))
}
