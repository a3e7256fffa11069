package domain

import (
	"errors"
	"fmt"
)

// Reason is the closed set of reasons peerctl refuses an operation. Each has
// a stable wire word (String) used on stderr, in JSON output and in scripts.
type Reason int

// The refusal reasons. Their wire words never change.
const (
	// ReasonHarnessUnsupported: the harness (Claude Code, or the transport's
	// program) cannot do what was asked, e.g. the courier program is missing
	// or an unknown peer protocol.
	ReasonHarnessUnsupported Reason = iota + 1
	// ReasonNotLive: no live session answers to the address.
	ReasonNotLive
	// ReasonIdentityMismatch: the address is ambiguous, or the session it
	// named changed (name moved, pid/socket changed) between reads.
	ReasonIdentityMismatch
	// ReasonDeliveryFailed: the transport could not start (program or socket
	// missing) or did not deliver.
	ReasonDeliveryFailed
	// ReasonNotAddressable: the session is live but cannot receive messages
	// (its record has no messaging socket, no name or no session id).
	ReasonNotAddressable
	// ReasonInvalidMessage: the message text was rejected before anything ran.
	ReasonInvalidMessage
	// ReasonNoReply: the message was handed over but no reply from the
	// target reached the courier before the deadline (send --await-reply).
	ReasonNoReply
	// ReasonWaitTimeout: the message was handed over but the target's turn
	// on it had not ended when the wait's deadline came (send --wait).
	ReasonWaitTimeout
	// ReasonOutcomeUnknown: the send ended (interrupted, timed out, the
	// transport died) after the text was handed over and before the other
	// side acknowledged it: it may or may not have arrived. Sending it
	// again may deliver it twice. A send that ends before the hand-over is
	// ReasonDeliveryFailed instead: then nothing was sent.
	ReasonOutcomeUnknown
	// ReasonHostUnreachable: another machine's peerctl could not be used:
	// ssh could not connect or authenticate, the host key is unknown or
	// changed, the connection was lost before the far side answered, or no
	// peerctl speaking this build's output protocol runs there.
	ReasonHostUnreachable
	// ReasonOutboxUnavailable: a durable send (send --durable, outbox
	// cancel/retry) could not use the outbox: the service could not start,
	// or its database fails its integrity check, the disk is full, its
	// folder is read-only. Nothing was stored; a send without --durable
	// still works. The database file is kept as it is.
	ReasonOutboxUnavailable
	// ReasonKeyConflict: a durable send's idempotency key names a message
	// already in the outbox with another target or text. Nothing was
	// stored or sent; the first message is as it was.
	ReasonKeyConflict
	// ReasonNotFound: what the command names is not there (outbox show,
	// cancel, retry: no message with that id).
	ReasonNotFound
	// ReasonWrongState: what the command names is there, but its state
	// does not allow the change (outbox cancel of a message delivered or
	// on its way, retry of one delivered).
	ReasonWrongState
	// ReasonNotAllowed: the trust policy (docs/POLICY.md) does not let
	// this sender message this target: a deny rule, or a hold rule while
	// held messages cannot be stored for approval. The detail names the
	// rule. Nothing was stored or sent.
	ReasonNotAllowed
)

var reasonWords = map[Reason]string{
	ReasonHarnessUnsupported: "harness_unsupported",
	ReasonNotLive:            "not_live",
	ReasonIdentityMismatch:   "identity_mismatch",
	ReasonDeliveryFailed:     "delivery_failed",
	ReasonNotAddressable:     "not_addressable",
	ReasonInvalidMessage:     "invalid_message",
	ReasonNoReply:            "no_reply",
	ReasonWaitTimeout:        "wait_timeout",
	ReasonOutcomeUnknown:     "outcome_unknown",
	ReasonHostUnreachable:    "host_unreachable",
	ReasonOutboxUnavailable:  "outbox_unavailable",
	ReasonKeyConflict:        "key_conflict",
	ReasonNotFound:           "not_found",
	ReasonWrongState:         "wrong_state",
	ReasonNotAllowed:         "not_allowed",
}

// Reasons lists every reason in a stable order.
func Reasons() []Reason {
	return []Reason{ReasonHarnessUnsupported, ReasonNotLive, ReasonIdentityMismatch,
		ReasonDeliveryFailed, ReasonNotAddressable, ReasonInvalidMessage, ReasonNoReply, ReasonWaitTimeout, ReasonOutcomeUnknown, ReasonHostUnreachable, ReasonOutboxUnavailable, ReasonKeyConflict,
		ReasonNotFound, ReasonWrongState, ReasonNotAllowed}
}

// String returns the stable wire word, e.g. "not_live".
func (r Reason) String() string {
	if w, ok := reasonWords[r]; ok {
		return w
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// ParseReason maps a wire word back to its Reason.
func ParseReason(word string) (Reason, error) {
	for r, w := range reasonWords {
		if w == word {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown refusal reason %q", word)
}

// Refusal is a clear, final "no" from peerctl: a Reason plus a human detail.
// Match it with errors.As; the Reason is the machine-readable part.
type Refusal struct {
	Reason Reason
	// Detail is the reason in words, whole: what the machinery saw too (a
	// courier's exit code, the requests its endpoint saw, its stderr).
	Detail string
	// Short is the detail for a person's one line when Detail carries such
	// internals ("" when Detail is short already): the CLI prints it on
	// stderr unless --debug asks for Detail; --json and every other
	// reader keep Detail.
	Short string
	// Candidates lists the sessions involved when the refusal is about an
	// ambiguous or moved identity; empty otherwise.
	Candidates []Candidate
	// Err is an underlying cause (an OS error, for instance); may be nil.
	Err error
	// Status is the other side's receipt word when its receipt is the
	// cause, e.g. "refused" from a Qwen Code delivery_status; StatusReason
	// is that receipt's own reason text. Both "" otherwise.
	Status       string
	StatusReason string
	// Suggestions are the names of live sessions close to a mistyped
	// address (not_live), closest first; never acted on.
	Suggestions []string
}

// Candidate names one session that an ambiguous address could mean.
type Candidate struct {
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
	// Harness is the word of the harness the session runs in
	// ("claude-code", "codex"...): what tells two sessions of one name apart.
	Harness string `json:"harness,omitempty"`
	PID     int    `json:"pid"`
	// File is the candidate's record file; Verdict is set when the record
	// is not live (a leftover to remove rather than a session to rename).
	File    string `json:"file"`
	Verdict string `json:"verdict,omitempty"`
}

// Refuse builds a *Refusal with a formatted detail.
func Refuse(r Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Error renders "<reason>: <detail>".
func (r *Refusal) Error() string {
	if r.Detail == "" {
		return r.Reason.String()
	}
	return r.Reason.String() + ": " + r.Detail
}

// Brief renders "<reason>: <short>", or Error() when Short is "".
func (r *Refusal) Brief() string {
	if r.Short == "" {
		return r.Error()
	}
	return r.Reason.String() + ": " + r.Short
}

// Unwrap returns the underlying cause, if any.
func (r *Refusal) Unwrap() error { return r.Err }

// AsRefusal reports whether err carries a *Refusal and returns it.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}
