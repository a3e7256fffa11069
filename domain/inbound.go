package domain

import (
	"strings"
	"time"
	"unicode/utf8"
)

// MaxInboundBytes bounds the text of one inbound message: a longer one is
// cut at this bound (on a UTF-8 character boundary) and marked Truncated.
const MaxInboundBytes = 1 << 20

// Inbound is one cross-session message that reached peerctl's courier: a
// session answering with SendMessage to the courier's address, or a Qwen
// Code session's user frame to peerctl's reply inbox (0.24.4: From is the
// frame's from, the session's ipcPath; FromName its fromName). Claude Code
// (2.1.328, 2.1.332) hands it to the courier as a user turn
// `<cross-session-message from="uds:<sender socket>" from-name="<name>" …>
// <text></cross-session-message>` (docs/CLAUDE-CODE-FACTS.md). Its text is
// data: peerctl never executes it, never re-sends it, and prints it escaped.
type Inbound struct {
	// From is the sender's address as its harness gave it: Claude Code's
	// "uds:<socket path>", Qwen Code's ipcPath as is.
	From string
	// FromName is the sender's display name.
	FromName string
	// Text is the message text (at most MaxInboundBytes bytes).
	Text string
	// At is when peerctl's endpoint saw it.
	At time.Time
	// Truncated is true when Text was cut at MaxInboundBytes.
	Truncated bool
}

// NewInbound builds an Inbound, cutting text at MaxInboundBytes.
func NewInbound(from, fromName, text string, at time.Time) Inbound {
	in := Inbound{From: from, FromName: fromName, Text: text, At: at}
	if len(text) > MaxInboundBytes {
		cut := MaxInboundBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		in.Text, in.Truncated = text[:cut], true
	}
	return in
}

// FromSocket is the socket path of From ("" when From is not a uds: address).
func (in Inbound) FromSocket() string {
	s, ok := strings.CutPrefix(in.From, "uds:")
	if !ok {
		return ""
	}
	return s
}

// IsFrom reports whether in was sent by the session whose inbox socket is
// socket: Claude Code names a sender by its own socket, so a reply from the
// target carries the target's socket path exactly.
func (in Inbound) IsFrom(socket string) bool {
	return socket != "" && in.FromSocket() == socket
}

// IsReplyFrom reports whether in was sent by target, by the rule of
// target's harness (HarnessSpec.ReplyFrom): Claude Code names a sender
// "uds:<its socket>" (IsFrom), Qwen Code by the frame's from, which a Qwen
// Code session sets to its ipcPath (0.24.4), the record's socket; a Codex
// reply's From is its thread id.
func (in Inbound) IsReplyFrom(target Session) bool {
	return target.Harness().spec().replyFrom(in, target)
}

// Notice is a "[Cross-session delivery notice]" Claude Code gave the
// courier about a message it sent (2.1.332): the session held it, refused
// it, or otherwise did not deliver it.
type Notice struct {
	// MsgID is the msg_id of the message the notice is about.
	MsgID string
	// Verdict is "held", "refused" or "not_delivered".
	Verdict string
	// Text is the notice as Claude Code worded it.
	Text string
	// At is when peerctl's endpoint saw it.
	At time.Time
}

// Apply turns the receipt of the message the notice is about: "held" makes
// its outcome OutcomeHeld with the notice as Claude Code's words; any other
// verdict is a ReasonDeliveryFailed refusal quoting the notice. A notice
// about another msg_id leaves rec as it is (ok false).
func (n Notice) Apply(rec Receipt) (out Receipt, ok bool, err error) {
	if n.MsgID == "" || n.MsgID != rec.MsgID {
		return rec, false, nil
	}
	if n.Verdict == "held" {
		rec.Outcome, rec.ClaudeResult = OutcomeHeld.String(), n.Text
		rec.Detail = "the session holds it (a delivery notice said so); it may release it later"
		return rec, true, nil
	}
	words := strings.TrimSpace(n.Text)
	if len(words) > 800 {
		words = words[:800] + "…"
	}
	return rec, true, Refuse(ReasonDeliveryFailed, "%s by the target (msg_id %s); Claude Code's notice: %q", OutcomeRefused, rec.MsgID, words)
}
