package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/peerctl/peerctl/app"
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
// live (at most app.MaxTTL), its deadline and key are the sender's: it
// expires by the earlier of the deadline and the time to live from now,
// so the time it waited on the bus never gives it longer), keyed by sender and key, decided by the
// trust policy as from entrance node:SENDER (a hold keeps it
// awaiting_approval): nil once it is stored (or was: the same key), then
// attempted as any durable message; nil too for the same key again with
// another address or text (dropped, a line in the log: a refusal's
// receipt for that key would read as the first message's); a
// *domain.Refusal when it never will be (denied, a text or an address
// refused); another
// error when it could not be stored now (the outbox cannot be used, the
// service stops): the bus gives it again later. retry above 0 is the
// sender's outbox retry number retry: the message of that key here is
// retried (app.Outbox.RetryFrom: once per number, looked at first when
// outcome_unknown); one not here (refused when it came, or pruned) is
// taken as new mail.
func (s *Server) Take(ctx context.Context, sender string, o wire.SendOrder, retry int) error {
	if _, err := domain.ParseNode(sender); err != nil {
		return &domain.Refusal{Reason: domain.ReasonInvalidMessage, Detail: err.Error(), Err: err}
	}
	if s.ob == nil {
		return fmt.Errorf("the outbox cannot be used: %v", s.storeErr)
	}
	if retry > 0 {
		found, err := s.store.List(ctx, ports.OutboxFilter{Key: mailKey(sender, o.Key)})
		if err != nil {
			return err
		}
		if len(found) > 0 {
			svc, release := s.looker(ctx, found[0])
			defer release()
			if _, err := s.ob.RetryFrom(ctx, svc, found[0].ID, sender, retry); err != nil {
				return err // taken again later (a change meanwhile, the outbox)
			}
			s.poke()
			return nil
		}
	}
	q := o.Query
	if q.DryRun {
		return domain.Refuse(domain.ReasonInvalidMessage, "a dry run is never durable")
	}
	order := wire.SendOrder{Query: q, Durable: min(o.Durable, app.MaxTTL), Expires: o.Expires, Key: mailKey(sender, o.Key), Settings: s.o.Settings,
		Sender: domain.NewSender(domain.EntranceNode, sender), Retries: retry}
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
		err := takeErr(a)
		if r, ok := domain.AsRefusal(err); ok && r.Reason == domain.ReasonKeyConflict {
			// Not the first message's fate: the key's receipts are its.
			fmt.Fprintf(s.o.Log, "peerctl serve: mail from node %s with key %q again, with another address or text: dropped (the key names the message taken first)\n",
				sender, wire.Clip(o.Key, 200))
			return nil
		}
		return err
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

// publishedMark names the outbox's mark of the receipts published.
const publishedMark = "receipts-published"

// Published is the outbox change number up to which the receipts of the
// messages taken from the bus were all published (the outbox's mark
// publishedMark, 0 without one or without an outbox).
func (s *Server) Published(ctx context.Context) (int64, error) {
	if s.store == nil {
		return 0, nil
	}
	return s.store.Mark(ctx, publishedMark)
}

// SetPublished keeps upTo as Published.
func (s *Server) SetPublished(ctx context.Context, upTo int64) error {
	if s.store == nil {
		return nil
	}
	return s.store.SetMark(ctx, publishedMark, upTo)
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

// Receipt records r, node from's receipt of a message this service put in
// its mail (app.Outbox.Heard): the message here with r's key for host
// nats:FROM takes the states it had there. A receipt that names no such
// message (pruned since, or not ours) is dropped with a log line; an error
// when it could not be recorded now (the bus gives it again).
func (s *Server) Receipt(ctx context.Context, from string, r wire.MailReceipt) error {
	if s.ob == nil {
		return fmt.Errorf("the outbox cannot be used: %v", s.storeErr)
	}
	host := "nats:" + from
	found, err := s.store.List(ctx, ports.OutboxFilter{Key: string(r.Key)})
	if err != nil {
		return err
	}
	i := slices.IndexFunc(found, func(m ports.OutboxMessage) bool { return m.Host == host })
	if i < 0 {
		fmt.Fprintf(s.o.Log, "peerctl serve: a receipt from node %s for key %q names no message here (dropped)\n", from, wire.Clip(string(r.Key), 200))
		return nil
	}
	m, hist, err := s.store.Get(ctx, found[i].ID)
	if err != nil {
		return err
	}
	far := app.FarState{ID: r.ID, Outcome: r.Outcome, Transport: r.Transport, MsgID: r.MsgID, Session: r.SessionID}
	for _, e := range r.History {
		st, err := domain.ParseOutboxState(e.State)
		if err != nil {
			continue // ReadMailReceipt checked them
		}
		far.History = append(far.History, app.FarEvent{At: parseTime(e.At), State: st, Reason: e.Reason})
	}
	got, err := s.ob.Heard(ctx, m, hist, host, far)
	if err == nil && got.State != m.State {
		s.logMessage(m, got.State, got.Reason)
	}
	return err
}

// busWay is the way of durable order o to dest, node's outbox on the
// fleet's bus: each attempt puts it in node's mail (app.Outbox.Forward:
// only its query, its key, its deadline and the rest of its time to live
// cross), once;
// its states there come back as receipts (Receipt). A service that is not
// on the bus refuses it, nothing stored.
func (s *Server) busWay(o wire.SendOrder, dest domain.Dest, node string) (way, error) {
	if s.post == nil {
		return way{}, domain.Refuse(domain.ReasonHostUnreachable,
			"this peerctl serve is not on the fleet's bus (it was started without $PEERCTL_NATS or --nats): nothing was stored for %s; stop it (peerctl serve stop) and send again with $PEERCTL_NATS set", dest)
	}
	q := o.Query
	return way{host: dest, address: q.Address, release: func() {},
		attempt: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error) {
			post := func(ctx context.Context, ttl time.Duration) error {
				return s.post(ctx, node, wire.SendOrder{Query: q, Key: m.Key, Durable: max(ttl, time.Second), Expires: m.Expires.UTC()}, m.Retries)
			}
			got, err := s.ob.Forward(ctx, m, dest.String(), post)
			if errors.Is(err, ports.ErrWrongState) { // a receipt came first
				got, _, err = s.store.Get(ctx, m.ID)
			}
			return got, app.SendResult{}, err
		},
		recover: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error) {
			return s.ob.Recover(ctx, nil, m)
		},
		handed: func(app.SendResult, error) (wire.Sent, error) {
			return wire.Sent{Receipt: wire.Receipt{OK: true, Outcome: domain.OutboxDelivered.String(), Host: dest.String(),
				Detail: "delivered on " + dest.String() + " (peerctl outbox show has its receipt)"}}, nil
		},
	}, nil
}

// autoKey is a key for a durable send to a node given none: the node
// keeps one message per sender and key.
func autoKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "auto-" + hex.EncodeToString(b)
}
