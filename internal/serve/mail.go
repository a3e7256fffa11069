package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Durable sends from other nodes (docs/FLEET.md, "Durable sends"): the
// fleet's bus gives the service each message another node's service put in
// this node's mail (Take), and publishes the receipts of their changes
// (MailChanges) back to their senders. The service is the wiring.Mailbox.

// MailKeyPrefix begins the outbox key of every message taken from the
// bus: "nats:SENDER:KEY", so two senders' equal keys are two messages,
// and the same sender's key again is the same message for its life in
// the outbox. A key given here may not begin with it.
const MailKeyPrefix = "nats:"

// mailKey is the outbox key of node sender's key.
func mailKey(sender, key string) string { return MailKeyPrefix + sender + ":" + key }

// mailChangesBatch bounds the outbox changes one MailChanges reads.
const mailChangesBatch = 500

// Take keeps o, a durable send from node sender, in the outbox as a send
// here (its host and settings this service's; only its query, time to
// live and key are the sender's), keyed by sender and key, decided by the
// trust policy as from entrance node:SENDER (a hold keeps it
// awaiting_approval): nil once it is stored (or was: the same key), then
// attempted as any durable message; a *domain.Refusal when it never will
// be (denied, a key conflict, a text or an address refused); another
// error when it could not be stored now (the outbox cannot be used, the
// service stops): the bus gives it again later.
func (s *Server) Take(ctx context.Context, sender string, o wire.SendOrder) error {
	if _, err := domain.ParseNode(sender); err != nil {
		return &domain.Refusal{Reason: domain.ReasonInvalidMessage, Detail: err.Error(), Err: err}
	}
	if s.ob == nil {
		return fmt.Errorf("the outbox cannot be used: %v", s.storeErr)
	}
	q := o.Query
	if q.DryRun {
		return domain.Refuse(domain.ReasonInvalidMessage, "a dry run is never durable")
	}
	order := wire.SendOrder{Query: q, Durable: o.Durable, Key: mailKey(sender, o.Key), Settings: s.o.Settings,
		Sender: domain.NewSender(domain.EntranceNode, sender)}
	stored := make(chan struct{})
	answered := make(chan Answer, 1)
	s.touch(1)
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		defer s.touch(-1)
		answered <- s.send(s.life, order, func(Ref) { close(stored) })
	}()
	select {
	case <-stored:
		return nil
	case a := <-answered:
		select {
		case <-stored:
			return nil // stored, then attempted: what came of it is the receipts'
		default:
		}
		return takeErr(a)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeErr is what a's send, which stored nothing new, says to the bus:
// nil for a message kept before (its key); a refusal for good; another
// error to be tried again (the outbox could not be used).
func takeErr(a Answer) error {
	switch r := a.Refusal; {
	case a.Ref != nil && r == nil:
		return nil
	case r != nil && r.Reason == domain.ReasonOutboxUnavailable.String():
		return fmt.Errorf("%s", r.Detail)
	case r != nil:
		reason, err := domain.ParseReason(r.Reason)
		if err != nil {
			reason = domain.ReasonInvalidMessage
		}
		return &domain.Refusal{Reason: reason, Detail: string(r.Detail)}
	case a.Usage:
		return &domain.Refusal{Reason: domain.ReasonInvalidMessage, Detail: string(a.Error)}
	case a.Code != 0:
		return errors.New(string(a.Error))
	}
	return nil
}

// MailChanges are the receipts of the messages taken from the bus that
// changed after outbox change number after (each once, as it stands
// now, with its history), at most mailChangesBatch changes read, and the
// number to ask after next.
func (s *Server) MailChanges(ctx context.Context, after int64) (receipts []wire.MailReceipt, next int64, err error) {
	if s.store == nil {
		return nil, after, nil
	}
	events, err := s.store.Events(ctx, after, mailChangesBatch)
	if err != nil {
		return nil, after, err
	}
	next = after
	seen := map[int64]bool{}
	for _, e := range events {
		next = max(next, e.Seq)
		if seen[e.MessageID] {
			continue
		}
		seen[e.MessageID] = true
		m, hist, err := s.store.Get(ctx, e.MessageID)
		if errors.Is(err, ports.ErrNoMessage) {
			continue // pruned since
		}
		if err != nil {
			return nil, after, err
		}
		if r, ok := mailReceipt(m, hist); ok {
			receipts = append(receipts, r)
		}
	}
	return receipts, next, nil
}

// mailReceipt is m's receipt for the node that sent it, when m was taken
// from the bus (its sender a node, its key that node's).
func mailReceipt(m ports.OutboxMessage, hist []ports.OutboxEvent) (wire.MailReceipt, bool) {
	node := m.Sender.Where()
	key, ok := strings.CutPrefix(m.Key, mailKey(node, ""))
	if m.Sender.Entrance() != domain.EntranceNode || node == "" || !ok || key == "" {
		return wire.MailReceipt{}, false
	}
	d := wire.OutboxMessageOf(m, hist)
	return wire.MailReceipt{V: wire.MailVersion, To: node, Key: []byte(key), ID: m.ID, State: d.State, Reason: d.Reason, Outcome: d.Outcome,
		Transport: d.Transport, MsgID: d.MsgID, SessionID: d.SessionID, UpdatedAt: d.UpdatedAt, History: d.History}, true
}
