package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// DefaultTTL is a durable message's time to live when none is given.
const DefaultTTL = 24 * time.Hour

// MaxTTL is the longest time to live a durable message is kept: 30 days,
// the outbox's retention and the fleet's mail stream's.
const MaxTTL = 30 * 24 * time.Hour

// MaxBackoff is the longest wait between two attempts at a stored message.
const MaxBackoff = 5 * time.Minute

// DefaultRetention is how long a finished message (domain.OutboxState.
// Finished) is kept after its last change when no retention is given.
const DefaultRetention = 30 * 24 * time.Hour

// PruneEvery is how often Prune deletes finished messages at most.
const PruneEvery = time.Hour

// RecoverWindow bounds the transcript check of an attempt a crash
// interrupted (Outbox.Recover).
const RecoverWindow = 3 * time.Second

// Outbox runs the durable-send use cases over a ports.Outbox: store a
// message once per key, attempt it with the Service its request builds,
// check an interrupted attempt against the target's transcript, cancel and
// retry. The guarantee (docs/SERVE.md): a stored message is never lost;
// it is handed to the harness at most once unless a check says the
// hand-over did not happen; what cannot be checked is OutboxOutcomeUnknown
// and waits for Retry. Build it with NewOutbox.
type Outbox struct {
	store     ports.Outbox
	now       func() time.Time
	retention time.Duration
	// pruned is when Prune last deleted (under mu).
	mu     sync.Mutex
	pruned time.Time
}

// NewOutbox builds the use cases over store, keeping finished messages
// DefaultRetention; now is the clock (nil: time.Now).
func NewOutbox(store ports.Outbox, now func() time.Time) *Outbox {
	if now == nil {
		now = time.Now
	}
	return &Outbox{store: store, now: now, retention: DefaultRetention}
}

// WithRetention sets how long a finished message is kept after its last
// change (0: for ever) and returns o.
func (o *Outbox) WithRetention(d time.Duration) *Outbox {
	o.retention = d
	return o
}

// Prune deletes, with their history, the finished messages (delivered,
// taken_up, replied, held, refused, expired, cancelled) whose last change
// is older than the retention period, and returns how many. It does so at
// most once per PruneEvery (the first call does): call it as often as
// convenient. Stored, delivering and outcome_unknown messages are never
// pruned, whatever their age; a pruned message's key is free again.
func (o *Outbox) Prune(ctx context.Context) (int, error) {
	now := o.now()
	o.mu.Lock()
	due := o.retention > 0 && (o.pruned.IsZero() || now.Sub(o.pruned) >= PruneEvery || now.Before(o.pruned))
	if due {
		o.pruned = now
	}
	o.mu.Unlock()
	if !due {
		return 0, nil
	}
	var finished []domain.OutboxState
	for _, s := range domain.OutboxStates() {
		if s.Finished() {
			finished = append(finished, s)
		}
	}
	return o.store.Prune(ctx, finished, now.Add(-o.retention))
}

// Store is the outbox underneath (list and show read it directly).
func (o *Outbox) Store() ports.Outbox { return o.store }

// DurableRequest asks to keep one message until it can be delivered.
type DurableRequest struct {
	// Key makes the request idempotent ("" for none): the same key again,
	// with the same target and text, returns the first message; with
	// another target or text it is refused (domain.ReasonKeyConflict).
	Key string
	// Address and Text are as in SendRequest.
	Address, Text string
	// Host is the machine the target runs on ("" for this one): the
	// message is then attempted with AttemptElsewhere.
	Host string
	// TTL is how long the message is kept undelivered (0: DefaultTTL).
	TTL time.Duration
	// Deadline, when set, is the latest it is kept undelivered (its
	// sender's on another machine): the earlier of it and TTL from now
	// is its expiry; one already past expires it at its first attempt.
	Deadline time.Time
	// Request is the caller's encoding of how to send it (opaque here).
	Request []byte
	// Sender is who sends it (kept with the message, shown by outbox show).
	Sender domain.Sender
	// Held, when set, is the trust policy's decision to hold it: the
	// message is stored awaiting_approval, with the rule, and is not
	// attempted until Approve.
	Held *domain.Decision
	// Retries is its Retries when stored: for a message another node's
	// retry brought (RetryFrom), that retry's number.
	Retries int
	// Wait: the message asks to wait for the end of the turn on it
	// (SendRequest.Wait). Where its target's harness can be told now
	// (Service.canWaitStored) and peerctl cannot see such a turn end, it
	// is refused with harness_unsupported and nothing is stored.
	Wait bool
}

// Submit validates the text and stores the message, due at once; created
// is false when req.Key named an existing message with the same target
// (address and host) and text, which is returned as it stands (a repeat:
// nothing is stored or sent). A key that names a message with another
// target or text is refused with domain.ReasonKeyConflict, that message
// returned: a caller that reused a key by mistake would otherwise believe
// a message was kept that never will be sent. A text peerctl would refuse
// (domain.NewMessage) is refused here, before anything is stored, and so
// is an address that is a session-id prefix (domain.DurableAddress, an
// error wrapping domain.ErrBadAddress) in svc's registry read: a message
// tried later must not go to a session started since (svc nil: a message
// for another machine, whose peerctl resolves it; a read that fails is
// no refusal, Attempt holds the rule too).
func (o *Outbox) Submit(ctx context.Context, svc *Service, req DurableRequest) (ports.OutboxMessage, bool, error) {
	if _, err := domain.NewMessage(req.Text); err != nil {
		return ports.OutboxMessage{}, false, err
	}
	if svc != nil && req.Host == "" {
		if l, err := svc.Read(ctx); err == nil {
			if err := domain.DurableAddress(l.Entries, req.Address); err != nil {
				return ports.OutboxMessage{}, false, err
			}
			if req.Wait {
				if err := svc.canWaitStored(l.Entries, req.Address); err != nil {
					return ports.OutboxMessage{}, false, err
				}
			}
		}
	}
	ttl := req.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := o.now()
	put := ports.OutboxMessage{Key: req.Key, Address: req.Address, Host: req.Host, Text: req.Text, Request: req.Request,
		Created: now, Expires: now.Add(ttl), NextAt: now, Sender: req.Sender, Retries: req.Retries}
	if !req.Deadline.IsZero() && req.Deadline.Before(put.Expires) {
		put.Expires = req.Deadline
	}
	if d := req.Held; d != nil {
		put.State, put.Reason, put.Rule, put.NextAt = domain.OutboxAwaitingApproval, heldReason(*d), ruleOf(*d), time.Time{}
	}
	m, created, err := o.store.Put(ctx, put)
	if err != nil || created {
		return m, created, err
	}
	var differs []string
	if m.Address != req.Address || m.Host != req.Host {
		differs = append(differs, fmt.Sprintf("its target is %q, not %q", OutboxTarget(m.Address, m.Host), OutboxTarget(req.Address, req.Host)))
	}
	if m.Text != req.Text {
		differs = append(differs, fmt.Sprintf("its text differs (%d bytes, not %d)", len(m.Text), len(req.Text)))
	}
	if len(differs) > 0 {
		return m, false, domain.Refuse(domain.ReasonKeyConflict, "key %q names message %d (%s), and %s: nothing was stored or sent; a new message needs a new key",
			req.Key, m.ID, m.State, strings.Join(differs, " and "))
	}
	return m, false, nil
}

// OutboxTarget is a target as the outbox shows it: the address, after
// its machine when that is another ("far: proj-89").
func OutboxTarget(address, host string) string {
	if host == "" {
		return address
	}
	return host + ": " + address
}

// heldReason is a held message's reason: the decision, and what a person
// does with it (the commands with its id are the receipt's and outbox
// show's to print: the reason is written before the id is known).
func heldReason(d domain.Decision) string {
	return "held for approval: " + d.Why() + "; nothing was sent: " + HeldHint
}

// HeldHint ends a held message's reason: what a person does with it. A
// printer that knows the message's id writes the commands in its place
// (ApproveHint).
const HeldHint = "outbox approve delivers it, outbox deny ends it"

// ApproveHint is HeldHint with the commands for message id.
func ApproveHint(id int64) string {
	return fmt.Sprintf("peerctl outbox approve %d delivers it, peerctl outbox deny %d ends it", id, id)
}

// ruleOf is the rule that decided d, with its place ("rule 2: hold from=mcp to=*").
func ruleOf(d domain.Decision) string { return d.RuleName() + ": " + d.Rule.String() }

// ErrNotAwaiting is returned by Approve and Deny for a message that does
// not await approval.
var ErrNotAwaiting = errors.New("only a message awaiting approval can be approved or denied")

// Approve stores message id, which awaits approval, for delivery now, as
// any durable message (Attempt: its time to live counted again from now,
// as long as it was first given), noting who approved it (by: the
// approver's sender, "cli" or "cli:reviewer-1") in the message and its
// history. Its attempts decide the trust policy again with the rules of
// their time, the hold passing (app.Sending.Approved): a deny rule added
// since still refuses it. ErrNotAwaiting (wrapped, with its state) for a
// message in another state; ports.ErrNoMessage for an unknown id.
func (o *Outbox) Approve(ctx context.Context, id int64, by domain.Sender) (ports.OutboxMessage, error) {
	m, _, err := o.store.Get(ctx, id)
	if err != nil {
		return m, err
	}
	now := o.now()
	m, err = o.store.Move(ctx, id, []domain.OutboxState{domain.OutboxAwaitingApproval}, ports.OutboxChange{State: domain.OutboxStored, At: now, NextAt: now,
		Expires: now.Add(m.TTL), ApprovedBy: by.String(),
		Reason: fmt.Sprintf("approved by %s (outbox approve): it is delivered as a durable message", by)})
	return m, notAwaiting(id, m, err)
}

// Deny ends message id, which awaits approval: denied, never sent, noting
// who denied it (by). Errors as Approve's.
func (o *Outbox) Deny(ctx context.Context, id int64, by domain.Sender) (ports.OutboxMessage, error) {
	m, err := o.store.Move(ctx, id, []domain.OutboxState{domain.OutboxAwaitingApproval}, ports.OutboxChange{State: domain.OutboxDenied, At: o.now(),
		Reason: fmt.Sprintf("denied by %s (outbox deny): it was never sent", by)})
	return m, notAwaiting(id, m, err)
}

func notAwaiting(id int64, m ports.OutboxMessage, err error) error {
	if errors.Is(err, ports.ErrWrongState) {
		return fmt.Errorf("message %d is %s: %w", id, m.State, ErrNotAwaiting)
	}
	return err
}

// DurableOutcome is the outcome word a receipt gives for durable message
// m as it stands (a repeated key's answer, docs/OUTPUT.md): "stored"
// while it waits; "awaiting_approval" while the trust policy holds it; once handed over, its receipt's word ("queued",
// "delivered", "held"...) or else its state; otherwise its state
// ("refused", "expired", "cancelled", "outcome_unknown"), never the word
// of a receipt that a later refusal overrode.
func DurableOutcome(m ports.OutboxMessage) string {
	switch {
	case m.State.Pending():
		return "stored"
	case m.State.Handed() && m.Outcome != "":
		return m.Outcome
	}
	return m.State.String()
}

// Attempt tries stored message m once with svc (built from m's request)
// and req (Address and Text are m's): past its TTL it becomes expired,
// with its last reason; a refusal that may pass (domain.Retryable) before
// anything was handed over stores it again, due after domain.Backoff
// (unless the trust policy, asked again by the address when the target
// is not there, denies it: refused, or holds it: awaiting_approval); a
// target that has just started and not settled (Service.unsettled) is
// handed nothing: the message stays stored (notSettled); a
// hand-over gives delivered (held when the harness holds it, taken_up
// when the transcript showed it taken up) with the receipt; a hand-over
// of unknown outcome gives outcome_unknown; any other refusal refused.
// A ctx that ends during the attempt (its client hung up, SIGTERM) cuts
// the send short, never the record of what it did: a send interrupted
// before anything was sent is stored again. It returns the message as it
// now stands, the send's result, and the send's error (a *domain.Refusal)
// or, when the change could not be recorded, the store's.
func (o *Outbox) Attempt(ctx context.Context, svc *Service, m ports.OutboxMessage, req SendRequest) (ports.OutboxMessage, SendResult, error) {
	req.Address, req.Text = m.Address, m.Text
	if gone, err := o.expire(ctx, &m); gone || err != nil {
		return m, SendResult{}, err
	}
	_, target, err := svc.target(ctx, req.Address, req.Text)
	if err == nil && domain.ByPrefixOnly(target, req.Address) {
		err = domain.Refuse(domain.ReasonNotLive, "no live session has the name or full id %q; session %s's id begins with it, but a durable message never goes to an id prefix (it may name a session started since)",
			req.Address, target.ID())
		target = domain.Session{}
	}
	if r, ok := domain.AsRefusal(err); ok && r.Reason != domain.ReasonNotAllowed {
		// No session to decide on: the trust policy decides by the
		// address (a deny rule added since ends it; a hold holds it).
		if perr := svc.AllowedTo(ctx, req.Address, domain.Dest{}); perr != nil {
			if pr, ok := domain.AsRefusal(perr); ok && pr.Reason == domain.ReasonNotAllowed {
				err = perr // not a read that ended early (ctx): that says nothing of the policy
			}
		}
	}
	if err != nil {
		return o.notHanded(ctx, m, SendResult{Target: target}, err)
	}
	if r := svc.unsettled(target, o.now()); r != nil {
		return o.notSettled(ctx, m, target, r)
	}
	change := ports.OutboxChange{State: domain.OutboxDelivering, At: o.now(), Attempt: true, Tried: true, SessionID: target.ID()}
	if !svc.confirmRule(target).ByReceipt {
		change.Transcript = svc.transcriptOf(target.Record())
	}
	return o.handOver(ctx, m, change, req, SendResult{Target: target}, svc.Send)
}

// SendFunc hands one message over and returns what came of it, as
// Service.Send does: a receipt, or a *domain.Refusal (outcome_unknown once
// the text may have been handed over).
type SendFunc func(ctx context.Context, req SendRequest) (SendResult, error)

// AttemptElsewhere tries stored message m once on another machine (m.Host)
// through send, that machine's own peerctl: the same states as Attempt,
// but the target is resolved there, so a refusal that may pass
// (domain.Retryable: host_unreachable, not_live, ...) came back before
// any hand-over and stores it again with backoff; so does a target that
// has just started and not settled, which send is asked to refuse there
// (req.Settled: the rule of Service.unsettled, decided where the record
// is). No transcript is recorded here, so a hand-over the service's stop
// interrupts before send told it (req.Handed) is outcome_unknown
// (Recover).
func (o *Outbox) AttemptElsewhere(ctx context.Context, m ports.OutboxMessage, req SendRequest, send SendFunc) (ports.OutboxMessage, SendResult, error) {
	req.Address, req.Text, req.Settled = m.Address, m.Text, true
	if gone, err := o.expire(ctx, &m); gone || err != nil {
		return m, SendResult{}, err
	}
	return o.handOver(ctx, m, ports.OutboxChange{State: domain.OutboxDelivering, At: o.now(), Attempt: true, Tried: true}, req, SendResult{}, send)
}

// recording is ctx for a change that records what an attempt did: not
// cancelled with ctx (a client that hung up, a service stopping on
// SIGTERM), so that what happened is kept, not left delivering with its
// outcome lost and answered as a failure of the outbox.
func recording(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// expire moves *m, when its TTL has passed, to expired with its last
// reason; gone reports that it did.
func (o *Outbox) expire(ctx context.Context, m *ports.OutboxMessage) (gone bool, err error) {
	now := o.now()
	if now.Before(m.Expires) {
		return false, nil
	}
	why := "its time to live passed before it could be delivered"
	if m.Reason != "" {
		why += "; last: " + m.Reason
	}
	*m, err = o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxExpired, Reason: why, At: now})
	return true, err
}

// handOver records m as delivering (change), runs send and records what
// came of it: the hand-over (as soon as req.Handed reports it, again at
// the end when that came to another state or outcome, or only at the
// end), then taken up or replied (afterHanded); a send that handed
// nothing over is notHanded. base is the result so far (the target).
func (o *Outbox) handOver(ctx context.Context, m ports.OutboxMessage, change ports.OutboxChange, req SendRequest, base SendResult, send SendFunc) (ports.OutboxMessage, SendResult, error) {
	rec := recording(ctx)
	m, err := o.store.Move(rec, m.ID, []domain.OutboxState{domain.OutboxStored}, change)
	if err != nil {
		return m, base, err
	}
	// The hand-over is recorded as soon as the harness has the message
	// (req.Handed), before a wait or a reply wait that may take long.
	var early struct {
		m   ports.OutboxMessage
		err error
		ok  bool
	}
	req.Handed = func(r SendResult) {
		early.m, early.err = o.store.Move(rec, m.ID, []domain.OutboxState{domain.OutboxDelivering}, o.handedChange(r, nil))
		early.ok = early.err == nil
	}
	res, err := send(ctx, req)
	if !early.ok {
		// A receipt, or an outcome_unknown refusal (the text may be with
		// the harness), is a hand-over: it is never attempted again on its
		// own.
		r, refused := domain.AsRefusal(err)
		handed := res.Receipt.Outcome != "" || refused && r.Reason == domain.ReasonOutcomeUnknown
		if err != nil && !handed {
			return o.notHanded(ctx, m, res, err)
		}
		var serr error
		if m, serr = o.store.Move(rec, m.ID, []domain.OutboxState{domain.OutboxDelivering}, o.handedChange(res, err)); serr != nil {
			return m, res, serr
		}
	} else {
		m = early.m
		// Told before its confirmation ended (a far side's handed event
		// with the confirmation to come), the hand-over may have come to
		// another outcome or state since (confirmed delivered, held): the
		// end's receipt is recorded over it. An end without one (a far
		// call cut off) takes nothing back.
		if c := o.handedChange(res, err); res.Receipt.Outcome != "" && (c.State != m.State || c.Outcome != m.Outcome) {
			var serr error
			if m, serr = o.store.Move(rec, m.ID, []domain.OutboxState{m.State}, c); serr != nil {
				return m, res, serr
			}
		}
	}
	m, serr := o.afterHanded(rec, m, req, res, err)
	if serr != nil {
		return m, res, serr
	}
	return m, res, err
}

// handedChange is the change of a message whose text the harness took
// (res.Receipt), or whose hand-over ended with err: delivered, held,
// outcome_unknown or refused, with the receipt. It is at the hand-over's
// end (res.Started and Elapsed, when known and not later than now), not
// after a wait or a reply wait that followed, so that a taken_up and a
// replied line come after it in time too.
func (o *Outbox) handedChange(res SendResult, err error) ports.OutboxChange {
	at := o.now()
	if h := res.Started.Add(res.Elapsed); !res.Started.IsZero() && res.Elapsed > 0 && h.Before(at) {
		at = h
	}
	c := ports.OutboxChange{State: domain.OutboxDelivered, At: at, Outcome: res.Receipt.Outcome, Transport: res.Receipt.Transport,
		MsgID: res.Receipt.MsgID, Reason: res.Receipt.Detail}
	if res.Outcome != domain.OutcomeUnknown {
		c.Outcome = res.Outcome.String()
	}
	if r, refused := domain.AsRefusal(err); refused {
		switch r.Reason {
		case domain.ReasonOutcomeUnknown:
			c.State = domain.OutboxOutcomeUnknown
		case domain.ReasonWaitTimeout, domain.ReasonNoReply:
		default:
			c.State = domain.OutboxRefused
		}
		c.Reason = r.Error()
	} else if err != nil {
		c.State, c.Reason = domain.OutboxOutcomeUnknown, err.Error()
	}
	if c.State == domain.OutboxDelivered && res.Outcome == domain.OutcomeHeld {
		c.State = domain.OutboxHeld
	}
	if c.State == domain.OutboxDelivered && c.Reason == "" {
		c.Reason = "the harness took it"
		if c.Outcome != "" {
			c.Reason += " (" + c.Outcome + ")"
		}
		if res.ConfirmNote != "" {
			c.Reason += ": " + res.ConfirmNote
		}
	}
	return c
}

// afterHanded records what a delivered message's send asked for after the
// hand-over: with req.Wait, taken_up at the transcript's take-up line, or
// a line saying why it was not seen; with req.AwaitReply, replied at the
// reply (its sender and first words), or a line saying none came (err,
// the no_reply refusal).
func (o *Outbox) afterHanded(ctx context.Context, m ports.OutboxMessage, req SendRequest, res SendResult, err error) (ports.OutboxMessage, error) {
	var serr error
	if m.State != domain.OutboxDelivered {
		return m, nil
	}
	if !res.TakenUpAt.IsZero() {
		m, serr = o.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivered}, ports.OutboxChange{State: domain.OutboxTakenUp,
			At: res.TakenUpAt, Reason: "the transcript shows the session took it up (its user line)"})
	} else if req.Wait > 0 {
		why := "the take-up was not seen"
		if res.WaitEnd != domain.WaitNone {
			why += " (the wait ended: " + res.WaitEnd.String() + ")"
		}
		if res.WaitNote != "" {
			why += ": " + res.WaitNote
		}
		m, serr = o.store.Move(ctx, m.ID, []domain.OutboxState{domain.OutboxDelivered}, ports.OutboxChange{State: domain.OutboxDelivered, At: o.now(), Reason: why})
	}
	if serr != nil || req.AwaitReply <= 0 {
		return m, serr
	}
	handed := []domain.OutboxState{domain.OutboxDelivered, domain.OutboxTakenUp}
	if res.Reply != nil {
		return o.store.Move(ctx, m.ID, handed, ports.OutboxChange{State: domain.OutboxReplied, At: res.Reply.At,
			Reason: wire.RepliedReason(res.Reply.FromName, res.Reply.Text)})
	}
	why := "no reply"
	if r, ok := domain.AsRefusal(err); ok {
		why = r.Error()
	}
	return o.store.Move(ctx, m.ID, handed, ports.OutboxChange{State: m.State, At: o.now(), Reason: why})
}

// notHanded records an attempt that handed nothing over (err, a refusal
// before any transport ran or one saying nothing was sent): held for
// approval when the trust policy holds it now, stored again with backoff
// when it may pass, refused otherwise (a deny rule: not_allowed). A try
// counts once: when its hand-over began (delivering), else here.
func (o *Outbox) notHanded(ctx context.Context, m ports.OutboxMessage, res SendResult, err error) (ports.OutboxMessage, SendResult, error) {
	ctx = recording(ctx)
	now := o.now()
	tried := m.State != domain.OutboxDelivering
	from := []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}
	if d, held := domain.AsHeld(err); held {
		m2, serr := o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxAwaitingApproval, Reason: heldReason(d), Rule: ruleOf(d), At: now, Tried: tried})
		if serr != nil {
			return m2, res, serr
		}
		return m2, res, err
	}
	r, ok := domain.AsRefusal(err)
	if !ok || !domain.Retryable(r.Reason) {
		m2, serr := o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxRefused, Reason: err.Error(), At: now, Tried: tried})
		if serr != nil {
			return m2, res, serr
		}
		return m2, res, err
	}
	n := m.Tries // the tries before this one, whether it was counted yet or not
	if !tried {
		n--
	}
	next := now.Add(domain.Backoff(n+1, MaxBackoff))
	if next.After(m.Expires) {
		next = m.Expires
	}
	m2, serr := o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxStored, Reason: domain.WithoutAdvice(r), At: now, NextAt: next, Tried: tried})
	if serr != nil {
		return m2, res, serr
	}
	return m2, res, err
}

// notSettled keeps stored message m, whose target has just started and
// not settled (Service.unsettled: r): a session holds what is posted to
// it then, so nothing is handed over; it is due again shortly (a registry
// change, its status written, makes the service try it sooner), and the
// look is no try. The send's error is nil: nothing was sent.
func (o *Outbox) notSettled(ctx context.Context, m ports.OutboxMessage, target domain.Session, r *domain.Refusal) (ports.OutboxMessage, SendResult, error) {
	now := o.now()
	next := now.Add(domain.Backoff(1, MaxBackoff))
	if next.After(m.Expires) {
		next = m.Expires
	}
	m, err := o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxStored, Reason: r.Detail, At: now, NextAt: next})
	return m, SendResult{Target: target}, err
}

// Recover settles message m, left in delivering by a service that stopped
// during the attempt (kill -9, a crash, a reboot), before anything else
// happens to it, by looking at the target (look): when the transcript
// (the path recorded when the attempt began) holds the text, enqueued for
// that session since the attempt began, it is delivered; when the
// transcript was read and does not, nothing arrived and it is stored
// again, due now; when there is nothing to read (a harness confirmed by
// its receipt only, a message for another machine) or the transcript
// cannot be read (gone, unreadable), it is outcome_unknown, for a person
// to retry. It never sends.
func (o *Outbox) Recover(ctx context.Context, svc *Service, m ports.OutboxMessage) (ports.OutboxMessage, error) {
	from := []domain.OutboxState{domain.OutboxDelivering}
	found, why, err := o.look(ctx, svc, m)
	if err != nil {
		return m, err
	}
	now := o.now()
	switch found {
	case lookArrived:
		return o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxDelivered, At: now, Outcome: domain.OutcomeDelivered.String(),
			Reason: "the service stopped during the hand-over; " + why})
	case lookAbsent:
		return o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxStored, At: now, NextAt: now,
			Reason: "the service stopped during the hand-over; " + why + ", so it did not arrive: it is sent again"})
	}
	return o.store.Move(ctx, m.ID, from, ports.OutboxChange{State: domain.OutboxOutcomeUnknown, At: now,
		Reason: "the service stopped during the hand-over and " + why + ": " + lookYourself(m) + ", then run peerctl outbox retry to send it again"})
}

// ReleaseLook bounds one look at a held message's transcript (Released).
const ReleaseLook = 500 * time.Millisecond

// Released looks whether held message m has been released since: Claude
// Code holds a message (a [Cross-session delivery notice] says so, and
// that "another notice follows on release, denial or expiry") and may
// release it later, after the courier that heard the notice has gone.
// When the transcript recorded at its hand-over shows the text enqueued
// for that session since the attempt began, m is delivered (released is
// true), its reason saying so; otherwise, and for a message whose
// transcript this machine cannot read, it stays held. A look takes
// ReleaseLook at most, with svc's Transcripts; it never sends. err is the
// store's, or ctx's.
func (o *Outbox) Released(ctx context.Context, svc *Service, m ports.OutboxMessage) (ports.OutboxMessage, bool, error) {
	if m.State != domain.OutboxHeld {
		return m, false, nil
	}
	found, why, err := o.lookFor(ctx, svc, m, ReleaseLook)
	if err != nil || found != lookArrived {
		return m, false, err
	}
	m, err = o.store.Move(recording(ctx), m.ID, []domain.OutboxState{domain.OutboxHeld}, ports.OutboxChange{State: domain.OutboxDelivered, At: o.now(),
		Outcome: domain.OutcomeDelivered.String(), Reason: "the session released it: " + why})
	return m, err == nil, err
}

// lookFound is what looking at a message's target found.
type lookFound int

const (
	// lookUnknown: nothing could be read (no transcript, not readable).
	lookUnknown lookFound = iota
	// lookArrived: the transcript shows the text arrived.
	lookArrived
	// lookAbsent: the transcript was read and does not show it.
	lookAbsent
)

// look reads message m's target's transcript (the path its last attempt
// recorded, with svc's Transcripts, for RecoverWindow at most) for the
// text enqueued for its session since that attempt began, and says what
// it found in words for its history. Only a transcript that could be read
// gives lookAbsent: one that is gone or cannot be read, a harness
// confirmed by its receipt only, or a message for another machine give
// lookUnknown. err is ctx's only.
func (o *Outbox) look(ctx context.Context, svc *Service, m ports.OutboxMessage) (lookFound, string, error) {
	return o.lookFor(ctx, svc, m, RecoverWindow)
}

// lookFor is look for window at most.
func (o *Outbox) lookFor(ctx context.Context, svc *Service, m ports.OutboxMessage, window time.Duration) (lookFound, string, error) {
	switch {
	case m.Host != "":
		return lookUnknown, fmt.Sprintf("its transcript is on %s, where this machine cannot read it", m.Host), nil
	case m.Transcript == "" || svc == nil || svc.transcripts == nil:
		return lookUnknown, "this harness's receipt cannot be read again (no transcript)", nil
	}
	cctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	enq, err := svc.transcripts.WaitEnqueued(cctx, ports.EnqueueQuery{Path: m.Transcript, Text: m.Text, SessionID: m.SessionID, Since: m.AttemptAt})
	switch {
	case err == nil:
		return lookArrived, fmt.Sprintf("the transcript shows it arrived (enqueued at %s)", enq.At.UTC().Format(time.RFC3339Nano)), nil
	case ctx.Err() != nil:
		return lookUnknown, "", ctx.Err()
	}
	if rerr := readable(m.Transcript); rerr != nil {
		return lookUnknown, fmt.Sprintf("the transcript cannot be read (%v)", rerr), nil
	}
	return lookAbsent, "the transcript does not show it", nil
}

// readable reports why the file at path cannot be read (nil: it can; an
// empty file can).
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// lookYourself says how a person checks whether m arrived.
func lookYourself(m ports.OutboxMessage) string {
	if m.Host != "" {
		return fmt.Sprintf("look (peerctl show --host %s %s)", m.Host, m.Address)
	}
	return fmt.Sprintf("look (peerctl show %s)", cmp.Or(m.SessionID, m.Address))
}

// ErrNotPending is returned by Cancel for a message no longer waiting.
var ErrNotPending = errors.New("only a stored message can be cancelled")

// ErrNotRetryable is returned by Retry for a message delivered or on its way.
var ErrNotRetryable = errors.New("only an outcome_unknown, expired, refused, cancelled or stored message can be retried")

// ErrUnconfirmed is returned by Retry for an outcome_unknown message the
// caller did not say the user confirmed: it may have arrived already, and
// sending it again may deliver it twice.
var ErrUnconfirmed = errors.New("it may have arrived already, and sending it again may deliver it twice")

// unconfirmed is ErrUnconfirmed for message id, with what to do.
func unconfirmed(id int64) error {
	return fmt.Errorf("message %d is outcome_unknown: %w; look first (peerctl outbox show %d, the session's transcript), then confirm the retry", id, ErrUnconfirmed, id)
}

// ErrOnTheBus is returned by Cancel for a message already in a node's
// mail on the fleet's bus: that node's service may deliver it at any
// time, so only that node can take it back.
var ErrOnTheBus = errors.New("it is on the fleet's bus, in its node's mail, and only that node can take it back")

// Cancel takes stored message id back (cancelled, with reason); one that
// is being delivered or is past that is ErrNotPending (wrapped, with its
// state); one already handed to the fleet's bus (transport BusTransport)
// is ErrOnTheBus (wrapped, saying how to cancel it on its node) and stays
// as it is; ports.ErrNoMessage for an unknown id.
func (o *Outbox) Cancel(ctx context.Context, id int64, reason string) (ports.OutboxMessage, error) {
	m, _, err := o.store.Get(ctx, id)
	if err != nil {
		return m, err
	}
	if m.State == domain.OutboxStored && m.Transport == BusTransport {
		node := nodeOf(m.Host)
		return m, fmt.Errorf("message %d: %w; it waits there or is being delivered, and its receipts keep this copy's state (peerctl outbox show %d). "+
			"To take it back, on node %s run `peerctl outbox` and `peerctl outbox cancel ID` of the message whose key is nats:<this node>: followed by %q, while it is stored or awaiting approval there",
			id, ErrOnTheBus, id, node, m.Key)
	}
	m, err = o.store.Move(ctx, id, []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: o.now(), Reason: reason})
	if errors.Is(err, ports.ErrWrongState) {
		return m, fmt.Errorf("message %d is %s: %w", id, m.State, ErrNotPending)
	}
	return m, err
}

// Retry makes message id due now: stored again, its TTL renewed (as long
// as it was first given) when it had passed. An outcome_unknown message is
// looked at first (its transcript, as Recover does, with svc; nil: nothing
// to look with): one the transcript shows arrived is delivered, not sent
// again; otherwise it is stored, its reason saying what was found (the
// transcript does not show it, or it could not be looked at and is sent
// again as asked, perhaps twice). Delivered, held, taken up and replied
// messages, and one being delivered, are ErrNotRetryable. confirmed says
// the user was told that an outcome_unknown message may have arrived and
// asked to send it again (outbox retry, the page's "Send again"): without
// it such a message is ErrUnconfirmed (wrapped, with its id) and stays as
// it is, also when it became outcome_unknown while the caller looked.
//
// A message for a node of the fleet's bus (host nats:NODE) is posted to
// that node again (Forward), numbered by its Retries (each retry counts
// one), so that the node's service retries its own copy once
// (RetryFrom) and looks at its transcript first there; its last receipt
// no longer stands. One still waiting there — posted and not finished
// (stored here, in the node's mail or stored or awaiting approval in its
// outbox) — is ErrWaiting (wrapped, with where it waits): nothing to
// retry.
func (o *Outbox) Retry(ctx context.Context, svc *Service, id int64, confirmed bool) (ports.OutboxMessage, error) {
	return o.retry(ctx, svc, id, confirmed, "outbox retry", 0)
}

// ErrWaiting is returned by Retry for a message that still waits for the
// node of the fleet's bus it was posted to.
var ErrWaiting = errors.New("it is still on its way there, and is delivered when that node's service runs (or, held there, once approved there): nothing to retry")

// retry is Retry made by by ("outbox retry", or another node's), its
// number n (0: one more than the message's Retries, except for a message
// another node put here, whose count is its sender's).
func (o *Outbox) retry(ctx context.Context, svc *Service, id int64, confirmed bool, by string, n int) (ports.OutboxMessage, error) {
	m, _, err := o.store.Get(ctx, id)
	if err != nil {
		return m, err
	}
	node, bus := busNode(m)
	if bus && m.State == domain.OutboxStored && m.Transport == BusTransport {
		return m, fmt.Errorf("message %d waits for node %s (%s): %w", id, node, m.Reason, ErrWaiting)
	}
	from := []domain.OutboxState{domain.OutboxOutcomeUnknown, domain.OutboxExpired, domain.OutboxRefused, domain.OutboxCancelled, domain.OutboxStored}
	if !confirmed {
		from = from[1:]
	}
	c := ports.OutboxChange{State: domain.OutboxStored, Reason: "retried by " + by, Retries: n, ClearReceipt: bus}
	if n == 0 && m.Sender.Entrance() != domain.EntranceNode {
		c.Retries = m.Retries + 1
	}
	if bus {
		c.Reason += fmt.Sprintf(": posted to node %s again (its retry %d); its service retries it there", node, c.Retries)
	}
	if m.State == domain.OutboxOutcomeUnknown {
		if !confirmed {
			return m, unconfirmed(id)
		}
		if bus {
			c.Reason += ", looking at its transcript first (sent again when it does not show it, or as asked when it cannot look: perhaps twice)"
		} else {
			found, why, err := o.look(ctx, svc, m)
			if err != nil {
				return m, err
			}
			switch found {
			case lookArrived:
				return o.store.Move(ctx, id, []domain.OutboxState{domain.OutboxOutcomeUnknown}, ports.OutboxChange{State: domain.OutboxDelivered, At: o.now(),
					Outcome: domain.OutcomeDelivered.String(), Retries: c.Retries, Reason: by + " looked first: " + why + "; it is not sent again"})
			case lookAbsent:
				c.Reason = by + " looked first: " + why + ": it is sent again"
			default:
				c.Reason = by + " could not look first: " + why + "; it is sent again as asked and may arrive twice"
			}
		}
	}
	now := o.now()
	c.At, c.NextAt = now, now
	if !now.Before(m.Expires) {
		c.Expires = now.Add(m.TTL)
	}
	m, err = o.store.Move(ctx, id, from, c)
	switch {
	case errors.Is(err, ports.ErrWrongState) && m.State == domain.OutboxOutcomeUnknown:
		return m, unconfirmed(id)
	case errors.Is(err, ports.ErrWrongState):
		return m, fmt.Errorf("message %d is %s: %w", id, m.State, ErrNotRetryable)
	}
	return m, err
}
