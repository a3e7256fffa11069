package serve

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// maxCarried bounds the plain sends the service remembers for the
// dashboard (the newest kept).
const maxCarried = 100

// carriedSend is one plain send (not durable, not a dry run) the service
// ran for a client or the page, here or on another machine.
type carriedSend struct {
	// address is the target as given; host the machine it is on ("":
	// this one).
	address, host, text string
	started             time.Time
	// receipt is what the send's target side said (the far side's with a
	// host); zero when nothing was handed over.
	receipt wire.Receipt
	// err is how the send failed: a refusal, or another error (nil when
	// the receipt says it all).
	err error
}

// carry remembers a plain send for the dashboard's Messages (carried).
// Such a message has no outbox id (0): it cannot be cancelled or retried,
// and it is not kept past the service's life.
func (s *Server) carry(cs carriedSend) {
	m := carried(cs, s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carried = append(s.carried, m)
	if len(s.carried) > maxCarried {
		s.carried = slices.Delete(s.carried, 0, len(s.carried)-maxCarried)
	}
}

// carried is cs as the dashboard shows it, ended at ended: its chain
// starts with "sent", then says how it ended in the outbox's words, with
// the outbox's reasons: refused (the refusal's word and detail as the
// reason), outcome_unknown, or delivered (held when the target holds
// it), then taken_up when the transcript showed it taken up, replied
// when the reply came. A send that awaited a reply and got none
// (no_reply), or whose --wait ran out, stays delivered with that refusal
// as its reason. An error that is no refusal is "failed".
func carried(cs carriedSend, ended time.Time) wire.OutboxMessage {
	out := cs.receipt
	at := wire.RFC3339(cs.started)
	m := wire.OutboxMessage{Address: cs.address, Host: cs.host, Text: cs.text, CreatedAt: at, UpdatedAt: wire.RFC3339(ended), Attempts: 1,
		SessionID: out.SessionID, Outcome: out.Outcome, Transport: out.Transport, MsgID: out.MsgID}
	hist := []wire.OutboxEvent{{At: at, State: "sent"}}
	after := "" // a refusal that came after the hand-over
	switch r, ok := domain.AsRefusal(cs.err); {
	case ok && (r.Reason == domain.ReasonNoReply || r.Reason == domain.ReasonWaitTimeout):
		after = r.Error()
	case ok && r.Reason == domain.ReasonOutcomeUnknown:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: domain.OutboxOutcomeUnknown.String(), Reason: r.Error()})
	case ok:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: domain.OutboxRefused.String(), Reason: r.Error()})
	case cs.err != nil:
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: "failed", Reason: cs.err.Error()})
	}
	if f := out.Refusal; f != nil && after == "" {
		after = f.Reason + ": " + f.Detail
	}
	if len(hist) == 1 {
		state, why := domain.OutboxDelivered, out.Detail
		if out.Outcome == domain.OutcomeHeld.String() {
			state = domain.OutboxHeld
		}
		if why == "" {
			why = "the harness took it"
			if out.Outcome != "" {
				why += " (" + out.Outcome + ")"
			}
			if out.ConfirmNote != "" {
				why += ": " + out.ConfirmNote
			}
		}
		if after != "" {
			why = after
		}
		hist = append(hist, wire.OutboxEvent{At: m.UpdatedAt, State: state.String(), Reason: why})
		if w := out.Wait; w != nil && w.TakenUp {
			hist = append(hist, wire.OutboxEvent{At: cmp.Or(w.TakenUpAt, m.UpdatedAt), State: domain.OutboxTakenUp.String(),
				Reason: "the transcript shows the session took it up (its user line)"})
		}
		if rep := out.Reply; rep != nil {
			hist = append(hist, wire.OutboxEvent{At: cmp.Or(rep.At, m.UpdatedAt), State: domain.OutboxReplied.String(),
				Reason: fmt.Sprintf("the session replied (from %q, %d bytes): %s", rep.FromName, len(rep.Text), wire.Clip(rep.Text, 200))})
		}
	}
	last := hist[len(hist)-1]
	m.State, m.Reason, m.History = last.State, last.Reason, hist
	return m
}

// carriedSends are the remembered plain sends, newest first.
func (s *Server) carriedSends() []wire.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.carried)
	slices.Reverse(out)
	return out
}
