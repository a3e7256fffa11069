package app

import (
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// A send here as its documents (docs/OUTPUT.md): the receipt `send
// --json` prints, which a far side's peerctl prints too and
// sshhost.Node.Send reads back, so that one printer serves both.

// Sent is a send's result res and error err as `peerctl send --json` gives
// them (see wire.Sent): the receipt, what to say beside it, the exit code.
// awaited is a send that waited for a reply (AwaitReply): its no_reply
// refusal is a receipt with ok false and exit 9, as a wait that ran out
// (wait_timeout) is with exit 11. Any other error is err itself (nothing
// was handed over, or what happened is the refusal's to say), beside the
// receipt of what is known of the attempt (ok false: its target and the
// transport's words, when it got that far).
func Sent(res SendResult, err error, awaited bool) (wire.Sent, error) {
	r, refused := domain.AsRefusal(err)
	if err != nil && (!awaited || !refused || r.Reason != domain.ReasonNoReply) {
		out := ReceiptOf(res)
		out.OK = false
		return wire.Sent{Receipt: out}, err
	}
	out := ReceiptOf(res)
	out.OK = true
	var notes []string
	for _, in := range res.OtherInbound {
		notes = append(notes, fmt.Sprintf("peerctl: note: a message from %q (%s) arrived meanwhile; it is not the reply: %s",
			wire.Clip(in.FromName, 200), wire.Safe(in.From), wire.Safe(wire.Clip(in.Text, 200))))
	}
	if awaited && res.ReplyNote != "" {
		notes = append(notes, "peerctl: note: "+res.ReplyNote)
	}
	if res.Plan == nil {
		notes = append(notes, unconfirmedNotes(res)...)
	} else if res.Plan.Warning != "" {
		notes = append(notes, "peerctl: warning: "+res.Plan.Warning)
	}
	if r == nil {
		r = waitTimeout(res)
	}
	code := wire.ExitOK
	if r != nil {
		code = wire.ExitCode(r.Reason)
		out.OK = false
		out.Refusal = &wire.RefusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: code}
		notes = append(notes, "peerctl: "+r.Error())
	}
	return wire.Sent{Receipt: out, Notes: notes, Code: code}, nil
}

// ReceiptOf is res as `send --json`'s receipt (ok true): the target, the
// transport's words and times, the confirmation, the wait, the reply and
// the other messages that came meanwhile; a dry run's plan ("planned").
func ReceiptOf(res SendResult) wire.Receipt {
	t := res.Target
	out := wire.Receipt{OK: true, Outcome: res.Receipt.Outcome, Transport: res.Receipt.Transport, Harness: t.Harness().String(), SessionID: t.ID(),
		PID: t.PID(), Name: t.Name(), Endpoint: t.Endpoint().String(), Detail: res.Receipt.Detail,
		ElapsedMs: res.Elapsed.Milliseconds(), TransportMs: res.TransportElapsed.Milliseconds(), Plan: res.Plan,
		MsgID: res.Receipt.MsgID, ClaudeResult: res.Receipt.ClaudeResult}
	if res.Plan != nil {
		out.Outcome, out.Transport = "planned", res.Plan.Transport
		return out
	}
	if res.Outcome != domain.OutcomeUnknown {
		out.Outcome = res.Outcome.String()
	}
	out.Confirmed, out.Transcript, out.ConfirmNote = res.Confirmed, res.Transcript, res.ConfirmNote
	out.ConfirmMs = res.ConfirmElapsed.Milliseconds()
	if res.Confirmed {
		out.ConfirmedAt = wire.RFC3339(res.Enqueued.At)
	}
	out.Wait = WaitOf(res)
	if res.Reply != nil {
		reply := InboundOf(*res.Reply)
		out.Reply = &reply
	}
	for _, in := range res.OtherInbound {
		out.OtherInbound = append(out.OtherInbound, InboundOf(in))
	}
	return out
}

// InboundOf is one inbound message as its document.
func InboundOf(in domain.Inbound) wire.Inbound {
	return wire.Inbound{Text: in.Text, FromName: in.FromName, From: in.From, At: wire.RFC3339(in.At), Truncated: in.Truncated}
}

// WaitOf is the receipt's "wait" object of res (nil without a wait).
func WaitOf(res SendResult) *wire.Wait {
	if res.WaitEnd == domain.WaitNone {
		return nil
	}
	w := &wire.Wait{End: res.WaitEnd.String(), Status: res.WaitStatus.String(), WaitingFor: res.WaitingFor, ElapsedMs: res.WaitElapsed.Milliseconds(), Note: res.WaitNote}
	if !res.TakenUpAt.IsZero() {
		w.TakenUp, w.TakenUpAt = true, wire.RFC3339(res.TakenUpAt)
	}
	return w
}

// unconfirmedNotes say that a send is not confirmed, and why (escaped:
// the note names a transcript path, built from registry data); nothing
// with NoConfirm (the receipt still says confirmed false and why).
func unconfirmedNotes(res SendResult) []string {
	var notes []string
	switch {
	case res.ByReceipt:
		// The receipt is the confirmation; held and posted say why not.
		if !res.Confirmed && !res.ConfirmSkipped {
			notes = append(notes, fmt.Sprintf("peerctl: warning: %s, not delivered yet: %s; check before sending it again", res.Outcome, wire.Safe(res.ConfirmNote)))
		}
	case !res.Confirmed && !res.ConfirmSkipped:
		notes = append(notes, fmt.Sprintf("peerctl: warning: %s, not confirmed: %s; %s", res.Outcome, wire.Safe(res.ConfirmNote), wire.Safe(unconfirmedHint(res))))
	}
	return notes
}

// waitTimeout is the wait_timeout refusal of a wait that ran out (nil for
// any other ending): the message was handed over, the turn had not ended.
func waitTimeout(res SendResult) *domain.Refusal {
	if res.WaitEnd != domain.WaitTimeout {
		return nil
	}
	return domain.Refuse(domain.ReasonWaitTimeout, "%s, %s, but the turn on it had not ended after %s (status %s%s); it may still end: do not resend it",
		res.Outcome, wire.TakenUp(WaitOf(res).TakenUpAt), res.WaitElapsed.Round(time.Millisecond), domain.StatusText(res.WaitStatus.String(), res.WaitingFor), answerIt(res.WaitStatus))
}

// answerIt is what a wait's ending says of a session last seen waiting
// (stopped on a dialog or a prompt: nothing goes on there until its user
// answers it); "" for any other status.
func answerIt(st domain.Status) string {
	if st != domain.StatusWaiting {
		return ""
	}
	return ": it waits on its user; answer it there"
}

// ReceiptLine is a receipt (not a dry run's) as one line for people: what
// happened and how it is known, e.g.
//
//	delivered: "proj-89" (session 26df…, pid 4652) by courier in 712ms (msg_id 0d9c…): its transcript shows the text in the session's queue (seen in 120ms)
//
// How it is known, first that applies: the target's transcript
// (confirmedAt), the target harness's own receipt (confirmed), Claude
// Code's words (claudeResult: SendMessage's result or the delivery notice
// that followed), the transport's note (detail). host names the machine
// ("" for this one); a durable send names its outbox message beside the
// pid ("pid 4652, outbox message 3"), one line for one message whatever
// the outbox calls its state. Registry text in it is escaped (wire.Safe).
func ReceiptLine(out wire.Receipt) string {
	return receiptLine(out, out.Outcome)
}

// HandedLine is a receipt's line at the hand-over (SendTrace.Handed) when
// its confirmation is still to come (Awaiting.Confirming), as a waiting
// send prints it before its wait. A courier's "queued" that its
// confirmation has not judged yet reads "handed over", without the
// harness's words ("not yet read by its Claude ..."): the confirmation's
// own line follows it ("peerctl: confirmed: ..." or the warning that it was
// not), so that one send does not read queued and then delivered. Any other
// receipt reads as ReceiptLine.
func HandedLine(out wire.Receipt) string {
	if out.Outcome != domain.OutcomeQueued.String() || out.Confirmed || out.ConfirmedAt != "" {
		return ReceiptLine(out)
	}
	out.ClaudeResult, out.Detail = "", ""
	return receiptLine(out, "handed over")
}

func receiptLine(out wire.Receipt, word string) string {
	on := ""
	if out.Host != "" {
		on = " on " + out.Host
	}
	id := ""
	if out.MsgID != "" {
		id = " (msg_id " + out.MsgID + ")"
	}
	var how string
	switch {
	case out.ConfirmedAt != "":
		how = fmt.Sprintf("its transcript shows the text in the session's queue (seen in %s)", (time.Duration(out.ConfirmMs) * time.Millisecond).Round(time.Millisecond))
	case out.Confirmed:
		how = "the session's own receipt said so"
		if out.Detail != "" {
			how += " (" + out.Detail + ")"
		}
	case out.Outcome == domain.OutcomeHeld.String() && out.Detail != "":
		// A held notice is written for a model (do not report it as
		// delivered, tell your user ...): peerctl's own words say what it
		// means; the notice stays in --json's claudeResult.
		how = out.Detail
	case out.ClaudeResult != "":
		how = "in Claude Code's words: " + out.ClaudeResult
	default:
		how = out.Detail
	}
	if how != "" {
		how = ": " + how
	}
	kept := ""
	if out.Outbox != nil {
		kept = fmt.Sprintf(", outbox message %d", out.Outbox.ID)
	}
	return fmt.Sprintf("%s: %q (session %s, pid %d%s)%s by %s in %s%s%s", wire.Safe(word), out.Name, wire.Safe(out.SessionID), out.PID, kept,
		wire.Safe(on), wire.Safe(out.Transport), time.Duration(out.TransportMs)*time.Millisecond, wire.Safe(id), wire.Safe(how))
}
