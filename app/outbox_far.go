package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Durable messages for a node of the fleet's bus (docs/FLEET.md,
// "Durable sends"): the outbox hands the message to the bus, into the
// node's own mail (Forward), where it waits for the node's service, even
// while this machine is off; that service keeps it in its own outbox,
// delivers it, and its receipts bring the message's states there back
// here (Heard).

// BusTransport is the transport of a message handed to the fleet's bus
// and not yet delivered there: it is not posted again.
const BusTransport = "bus"

// PostFunc puts a message in a node's mail on the bus, kept there ttl
// at most; nil once the bus has stored it.
type PostFunc func(ctx context.Context, ttl time.Duration) error

// Forward tries stored message m, for node where ("nats:NODE"), once:
// past its TTL it is expired (with the node's last word, when it has
// been posted); not posted yet, post puts it in the node's mail: then it
// stays stored, its transport BusTransport and its reason saying where it
// waits, due again at its expiry only (its states come by Heard); a post
// that fails stores it again after domain.Backoff, as a host that did not
// answer does. It returns the message as it now stands, or the store's
// error.
func (o *Outbox) Forward(ctx context.Context, m ports.OutboxMessage, where string, post PostFunc) (ports.OutboxMessage, error) {
	if gone, err := o.expire(ctx, &m); gone || err != nil {
		return m, err
	}
	now := o.now()
	if m.Transport == BusTransport {
		return o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, At: now,
			NextAt: m.Expires, Reason: m.Reason})
	}
	if err := post(ctx, m.Expires.Sub(now)); err != nil {
		next := now.Add(domain.Backoff(m.Tries+1, MaxBackoff))
		if next.After(m.Expires) {
			next = m.Expires
		}
		return o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, At: now,
			NextAt: next, Tried: true, Reason: fmt.Sprintf("%s: the fleet's bus did not take it (%v); tried again", where, err)})
	}
	return o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, At: now,
		NextAt: m.Expires, Tried: true, Transport: BusTransport,
		Reason: fmt.Sprintf("on the fleet's bus, in node %s's mail: its service takes it when it runs", nodeOf(where))})
}

// busNode is the node of the fleet's bus m is for (its host nats:NODE).
func busNode(m ports.OutboxMessage) (string, bool) {
	d, err := domain.ParseDest(m.Host)
	if err != nil || m.Host == "" {
		return "", false
	}
	return d.Node()
}

// RetryFrom is retry number n of message id, a message node's service
// put in this outbox, made by that node's outbox retry (Retry there):
// applied once per number — n not above the message's Retries is a
// replay of a retry already applied (the bus giving the same post again)
// and changes nothing. It is Retry, confirmed (the sender's user
// confirmed it; an outcome_unknown message is looked at first here), its
// reasons naming node's retry, and sets Retries to n. A message that
// cannot be retried here (delivered, on its way, held, awaiting
// approval) keeps its state with a line saying so, so that its receipt
// tells its sender where it stands.
func (o *Outbox) RetryFrom(ctx context.Context, svc *Service, id int64, node string, n int) (ports.OutboxMessage, error) {
	m, _, err := o.store.Get(ctx, id)
	if err != nil || n <= m.Retries {
		return m, err
	}
	by := fmt.Sprintf("node %s's outbox retry %d", node, n)
	got, err := o.retry(ctx, svc, id, true, by, n)
	if !errors.Is(err, ErrNotRetryable) {
		return got, err
	}
	return o.store.Move(ctx, id, []domain.OutboxState{got.State}, ports.OutboxChange{State: got.State, At: o.now(), Retries: n, NextAt: got.NextAt,
		Reason: fmt.Sprintf("%s: it is %s here, so it is not sent again", by, got.State)})
}

// nodeOf is where's node ("nats:NODE" gives NODE).
func nodeOf(where string) string {
	if d, err := domain.ParseDest(where); err == nil {
		if n, ok := d.Node(); ok {
			return n
		}
	}
	return where
}

// FarEvent is one change of a message in another node's outbox.
type FarEvent struct {
	At     time.Time
	State  domain.OutboxState
	Reason string
}

// FarState is where a message stands in the outbox of the node that took
// it: its id there, its history (oldest first) and the harness's receipt
// once handed over.
type FarState struct {
	ID                                 int64
	History                            []FarEvent
	Outcome, Transport, MsgID, Session string
}

// Heard records far, the state of message m (history hist) in the outbox
// of node where, as m's own: each change there not yet recorded here (a
// change is its time there, state and reason: the same words again later,
// after a retry, are a new change) is added to m's history in order, its
// reason headed "on WHERE (message ID there): ", its state m's —
// delivered, taken_up, replied, held, refused, expired, cancelled, denied
// and outcome_unknown as they are; stored and awaiting approval there keep
// m stored here (due at its expiry only once posted: it is not posted
// again; a retry not posted yet stays due), an attempt under way there
// (delivering) is not recorded. A change never takes m back to stored
// once it has moved on. The last handed change sets m's receipt words.
// What a change may do to m is FarMove's rule; a receipt of mail never
// stored there (id 0) is not m's once m's history names its message
// there (a repeat refused there), and changes nothing.
func (o *Outbox) Heard(ctx context.Context, m ports.OutboxMessage, hist []ports.OutboxEvent, where string, far FarState) (ports.OutboxMessage, error) {
	seen := map[string]bool{}
	change := func(at time.Time, state domain.OutboxState, why string) string {
		return fmt.Sprintf("%d\x00%s\x00%s", at.UnixNano(), state, why)
	}
	for _, h := range hist {
		seen[change(h.At, h.State, h.Reason)] = true
		seen[change(h.Last, h.State, h.Reason)] = true // folded
	}
	if far.ID == 0 && farID(hist, where) != 0 {
		return m, nil
	}
	head := wire.FarHead(where, far.ID)
	for _, e := range far.History {
		state := e.State
		switch state {
		case domain.OutboxDelivering:
			continue
		case domain.OutboxStored, domain.OutboxAwaitingApproval:
			state = domain.OutboxStored
		}
		why := e.Reason
		if why == "" {
			why = e.State.String()
		}
		why = head + why
		_, _, theirs := wire.FarOf(m.Reason, where)
		if seen[change(e.At, state, why)] || !FarMove(m.State, state, theirs, !e.At.After(m.Expires)) {
			continue
		}
		c := ports.OutboxChange{State: state, Reason: why, At: e.At}
		if state == domain.OutboxStored {
			c.NextAt = m.Expires
			if m.Transport != BusTransport {
				c.NextAt = m.NextAt // a retry not posted yet
			}
		}
		if state.Handed() {
			c.Outcome, c.Transport, c.MsgID, c.SessionID = far.Outcome, far.Transport, far.MsgID, far.Session
		}
		got, err := o.store.Move(recording(ctx), m.ID, []domain.OutboxState{m.State}, c)
		if err != nil {
			return m, err
		}
		m = got
		seen[change(e.At, state, why)] = true
	}
	return m, nil
}

// FarMove reports whether a change the node that took a message reports
// (to, as Heard maps it) may move the sender's copy of it from from: the
// copy follows the node's chain in order, and never back to stored from
// another state but when the node's own chain goes back there (theirs:
// from is the node's word, and the node's outbox, not this one, decides
// what may follow it there, as its own outbox retry does). A final state
// made here (domain.OutboxState.Finished: cancelled, expired here, ...)
// is never left but along the chain's own steps, delivered → taken_up →
// replied: a message cancelled here is never "delivered" after. One
// exception: a copy expired here takes a hand-over the node made by its
// deadline (byDeadline: the change's time there is not after it) whose
// receipt came late: the node keeps the same deadline, so expired is true
// only of a message not handed over by then.
func FarMove(from, to domain.OutboxState, theirs, byDeadline bool) bool {
	switch {
	case theirs: // never back from a hand-over: no retry there does that
		return to != domain.OutboxStored || !from.Handed()
	case !from.Finished():
		return to != domain.OutboxStored || from == domain.OutboxStored
	case from == domain.OutboxExpired && byDeadline && to.Handed():
		return true
	}
	chain := []domain.OutboxState{domain.OutboxDelivered, domain.OutboxTakenUp, domain.OutboxReplied}
	i, j := slices.Index(chain, from), slices.Index(chain, to)
	return i >= 0 && j > i
}

// farID is the id, in node where's outbox, of the message hist's far
// changes name (wire.FarHead), 0 when none does yet.
func farID(hist []ports.OutboxEvent, where string) int64 {
	for _, h := range hist {
		if id, _, ok := wire.FarOf(h.Reason, where); ok && id != 0 {
			return id
		}
	}
	return 0
}
