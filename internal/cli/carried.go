package cli

import (
	"slices"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
)

// maxCarried bounds the plain sends the service remembers for the
// dashboard (the newest kept).
const maxCarried = 100

// carry remembers a plain send (not durable, not a dry run) the service ran
// for a client or the page, for the dashboard's Messages: its address and
// text, when it ran, and how it ended (the receipt's outcome, or the
// refusal's word and detail). Such a message has no outbox id (0): it
// cannot be cancelled or retried, and it is not kept past the service's
// life.
func (s *server) carry(address, text string, started time.Time, res app.SendResult, err error) {
	at := outboxTime(started)
	m := wire.OutboxMessage{Address: address, Text: text, CreatedAt: at, UpdatedAt: outboxTime(s.now()), Attempts: 1,
		SessionID: res.Target.ID(), Outcome: res.Receipt.Outcome, Transport: res.Receipt.Transport, MsgID: res.Receipt.MsgID}
	switch r, ok := domain.AsRefusal(err); {
	case ok:
		m.State, m.Reason = r.Reason.String(), r.Detail
	case err != nil:
		m.State, m.Reason = "failed", err.Error()
	case res.Reply != nil:
		m.State = "replied"
	default:
		m.State = "delivered"
		m.Reason = res.Receipt.Outcome
	}
	m.History = []wire.OutboxEvent{{At: at, State: "sent"}, {At: m.UpdatedAt, State: m.State, Reason: m.Reason}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carried = append(s.carried, m)
	if len(s.carried) > maxCarried {
		s.carried = slices.Delete(s.carried, 0, len(s.carried)-maxCarried)
	}
}

// carriedSends are the remembered plain sends, newest first.
func (s *server) carriedSends() []wire.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.carried)
	slices.Reverse(out)
	return out
}
