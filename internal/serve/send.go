package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// DefaultHostTimeout bounds a call to another machine when the send's
// settings give none.
const DefaultHostTimeout = time.Minute

// harnessVars are the variables the harness flags fall back to
// ($CLAUDE_CONFIG_DIR, $PEERCTL_CLAUDE, ...): a send's Settings say them,
// so the service's own never stand in for the sender's.
var harnessVars = func() map[string]bool {
	out := map[string]bool{}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			out[f.Env] = true
		}
	}
	return out
}()

// harnessEnv is the service's environment as a send's harnesses read it:
// without the variables the send's Settings stand for.
func (s *Server) harnessEnv(k string) string {
	if harnessVars[k] {
		return ""
	}
	return s.o.Getenv(k)
}

// service builds the Service a send of q runs on with set: q's transport,
// timeout, confirmation window (none with NoConfirm) and sender's name,
// and the trust policy asked for every send with from (sendingOf);
// the default transport sends on the warm courier of those settings, held
// until release. notes are the harnesses' warnings.
func (s *Server) service(set wire.Settings, q wire.SendQuery, from *app.Sending) (svc *app.Service, release func(), notes []string, err error) {
	window := q.ConfirmTimeout
	if q.NoConfirm {
		window = -1
	}
	cfg := app.Config{Flags: set.Flags, Getenv: s.harnessEnv, Env: s.o.Environ(), Transport: q.Transport, Timeout: q.Timeout,
		ReceiptWindow: window, From: q.From, Sending: from}
	var hs app.Harnesses
	opts := []fx.Option{wiring.Module, fx.Supply(cfg), fx.Populate(&svc, &hs), fx.NopLogger}
	release = func() {}
	if q.Transport == "" {
		w, rel := s.warmFor(warmKey(set, q, window))
		release = rel
		opts = append(opts, fx.Decorate(w.Wrap))
	}
	if err := fx.New(opts...).Err(); err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("build peerctl: %w", wiring.Cause(err))
	}
	for _, h := range hs {
		for _, w := range h.Warnings() {
			notes = append(notes, "peerctl: warning: "+w)
		}
	}
	return svc, release, notes, nil
}

// remote is the channel to other machines for set: o.Remote's, else the
// system ssh ($PEERCTL_SSH the send's) with the hosts file's settings.
func (s *Server) remote(set wire.Settings) (ports.Remote, error) {
	if s.o.Remote != nil {
		return s.o.Remote(set)
	}
	getenv := func(k string) string {
		if k == "PEERCTL_SSH" {
			return set.SSH
		}
		return s.o.Getenv(k)
	}
	return wiring.NewSSHChannel(wiring.SSHOptions{Getenv: getenv, Book: wiring.NewHostBook(s.o.Getenv),
		Version: s.o.Version})
}

// sendingOf is the trust policy's sender of order o, as the service
// decides it (docs/POLICY.md): the entrance and sending session the
// order carries, and the decision its entrance made (never weakened
// here); approved when a person approved the message.
func sendingOf(o wire.SendOrder, approved bool) *app.Sending {
	f := o.Sender
	return &app.Sending{Entrance: f.Entrance(), Where: f.Where(), SessionName: f.SessionName(), SessionID: f.SessionID(), Approved: approved,
		Decided: o.Decided}
}

// decide is the trust policy's decision, made here with the rules of now,
// for order o to dest from (sendingOf): nil when it is allowed, else a
// not_allowed refusal (a hold's carries the decision: domain.AsHeld). A
// target here is decided as the session it resolves to on a fresh read,
// else by its address (app.Service.AllowedTo).
func (s *Server) decide(ctx context.Context, o wire.SendOrder, dest domain.Dest, from *app.Sending) error {
	var svc *app.Service
	cfg := app.Config{Flags: o.Settings.Flags, Getenv: s.harnessEnv, Env: s.o.Environ(), Sending: from}
	if err := fx.New(wiring.ReadModule, fx.Supply(cfg), fx.Populate(&svc), fx.NopLogger).Err(); err != nil {
		return fmt.Errorf("build peerctl: %w", wiring.Cause(err))
	}
	return svc.AllowedTo(ctx, o.Query.Address, dest)
}

// node is where a send of o to dest runs: this machine (its Service from
// service, let go by release; its warnings added to notes) or dest's
// peerctl.
func (s *Server) node(dest domain.Dest, o wire.SendOrder, notes *[]string) (n app.Node, release func(), err error) {
	set := o.Settings
	if dest.IsLocal() {
		n, release := s.here(set, sendingOf(o, false), notes)
		return n, release, nil
	}
	release = func() {}
	r, err := s.remote(set)
	if err != nil {
		return nil, release, err
	}
	limit := set.HostTimeout
	if limit <= 0 {
		limit = DefaultHostTimeout
	}
	return wiring.NewHostNode(r, dest, limit), release, nil
}

// here is this machine as the node a send with settings set from from
// runs on (a LocalNode of Sending only): its Service from service, on the
// warm couriers of its settings, held until release runs (once the send
// returned); the harnesses' warnings are added to notes.
func (s *Server) here(set wire.Settings, from *app.Sending, notes *[]string) (n app.LocalNode, release func()) {
	let := func() {}
	return app.LocalNode{Sending: func(q wire.SendQuery) (*app.Service, error) {
		svc, rel, warns, err := s.service(set, q, from)
		if err == nil {
			let = rel
			*notes = append(*notes, warns...)
		}
		return svc, err
	}}, func() { let() }
}

// destOf is the machine a send's Host names (the zero Dest: this one).
func destOf(host string) (domain.Dest, error) {
	if host == "" || host == domain.LocalDest {
		return domain.Dest{}, nil
	}
	return domain.ParseDest(host)
}

// send answers one send order: a plain send here or on another machine,
// or a durable one (durable). The trust policy is decided here first, with
// the order's sender (the service is an entrance too): a deny refuses it;
// a hold keeps it in the outbox, awaiting approval (a plain send becomes
// a durable one, app.DefaultTTL, once approved).
func (s *Server) send(ctx context.Context, o wire.SendOrder, stored func(Ref)) Answer {
	dest, err := destOf(o.Host)
	if err != nil {
		return failed(usageError{fmt.Errorf("--host: %w", err)})
	}
	if err := s.decide(ctx, o, dest, sendingOf(o, false)); err != nil {
		return s.held(ctx, o, dest, stored, err)
	}
	if o.Durable > 0 {
		return s.durable(ctx, o, dest, stored, nil)
	}
	if !dest.IsLocal() {
		// Refused here, before any connection, as a send here would be.
		if _, err := domain.NewMessage(o.Query.Text); err != nil {
			return failed(err)
		}
	}
	var notes []string
	n, release, err := s.node(dest, o, &notes)
	if err != nil {
		return failed(err)
	}
	started := time.Now()
	sent, err := n.Send(ctx, o.Query)
	release()
	if _, held := domain.AsHeld(err); held {
		// The registry changed since decide: held on the fresh read.
		return s.held(ctx, o, dest, stored, err)
	}
	if !o.Query.DryRun {
		s.carry(carriedSend{address: o.Query.Address, host: dest.String(), text: o.Query.Text, sender: o.Sender, started: started, receipt: sent.Receipt, err: err})
	}
	if err != nil {
		a := failed(err)
		a.Notes = notes
		return a
	}
	if o.Sender.Entrance() != domain.EntranceUnknown {
		sent.Receipt.Sender = wire.SenderOf(o.Sender)
	}
	return Answer{Done: true, Notes: notes, Sent: &sent}
}

// held answers order o that the trust policy did not allow (err): a hold
// is kept in the outbox, awaiting approval (a dry run is refused, as is
// every hold when the outbox cannot be used); a deny is refused.
func (s *Server) held(ctx context.Context, o wire.SendOrder, dest domain.Dest, stored func(Ref), err error) Answer {
	d, held := domain.AsHeld(err)
	if !held || o.Query.DryRun || s.ob == nil {
		return failed(err)
	}
	if o.Durable <= 0 {
		o.Durable = app.DefaultTTL
	}
	return s.durable(ctx, o, dest, stored, &d)
}

// Keep is the hold use case (held) for a send of q that another entrance
// ran here and the trust policy did not allow (err): a hold is kept in
// the outbox awaiting approval, as an order of the service's own
// settings from sender from (its receipt: outcome awaiting_approval, the
// outbox object with the rule); a dry run, a deny, any other error is
// err's refusal. It is how the service answers another node's send that
// its policy holds (docs/FLEET.md).
func (s *Server) Keep(ctx context.Context, q wire.SendQuery, from domain.Sender, err error) (wire.Sent, error) {
	a := s.held(ctx, wire.SendOrder{Query: q, Settings: s.o.Settings, Sender: from}, domain.Dest{}, func(Ref) {}, err)
	switch {
	case a.Refusal != nil:
		return wire.Sent{}, a.Refusal.Err()
	case a.Sent == nil:
		return wire.Sent{}, errors.New(string(a.Error))
	}
	sent := *a.Sent
	sent.Receipt.Outbox = a.Ref.OutboxRef()
	if a.Kept && a.Ref != nil {
		sent.Receipt.Detail = string(a.Ref.Reason)
	}
	sent.Notes = append(a.Notes, sent.Notes...)
	return sent, nil
}

// Answering is base (the command line's use cases) as the node a
// request of node sender runs on: its sends run as the service's own do,
// with the service's settings on their warm couriers (a running courier
// takes the text instead of one started per request), decided by the
// trust policy as a message from entrance node:SENDER on the fresh read
// of the send itself; one the policy holds is kept awaiting approval
// (Keep). The harnesses' warnings go to the service's log, as the
// command line's did.
func (s *Server) Answering(base app.LocalNode, sender string) app.Node {
	return nodeAnswer{LocalNode: base, s: s, from: domain.NewSender(domain.EntranceNode, sender)}
}

// nodeAnswer is a node whose sends run on the service's warm couriers
// (Server.Answering).
type nodeAnswer struct {
	app.LocalNode
	s    *Server
	from domain.Sender
}

func (a nodeAnswer) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	var notes []string
	n, release := a.s.here(a.s.o.Settings, &app.Sending{Entrance: a.from.Entrance(), Where: a.from.Where()}, &notes)
	defer release()
	n.Held = func(ctx context.Context, q wire.SendQuery, err error) (wire.Sent, error) {
		return a.s.Keep(ctx, q, a.from, err)
	}
	sent, err := n.Send(ctx, q)
	for _, w := range notes {
		fmt.Fprintln(a.s.o.Log, w)
	}
	return sent, err
}

// way is where a durable message is attempted: here, with a Service, or
// on another machine by its own peerctl.
type way struct {
	// host is the machine ("" Dest: this one); address the target there.
	host    domain.Dest
	address string
	// svc reads the registry for the submit's address rule (nil: another
	// machine's peerctl resolves it).
	svc *app.Service
	// attempt tries m once; recover settles m, left delivering by a
	// service that stopped during its attempt.
	attempt func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error)
	recover func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error)
	// stored runs when an attempt left the message stored (nil: nothing).
	stored func(ctx context.Context)
	// handed is a hand-over's documents from the attempt's result and error.
	handed func(res app.SendResult, err error) (wire.Sent, error)
	// release lets go of what the way holds (a warm courier).
	release func()
}

// wayOf is the way of o to dest; notes hear the harnesses' warnings.
// Every attempt decides the trust policy again, with the rules of its
// time (approved: a person approved the message, so a hold passes).
func (s *Server) wayOf(o wire.SendOrder, dest domain.Dest, approved bool, notes *[]string) (way, error) {
	if node, ok := dest.Node(); ok {
		return s.busWay(o, dest, node)
	}
	from := sendingOf(o, approved)
	if dest.IsLocal() {
		svc, release, warns, err := s.service(o.Settings, o.Query, from)
		if err != nil {
			return way{}, err
		}
		*notes = append(*notes, warns...)
		req := app.SendRequestOf(o.Query)
		return way{address: o.Query.Address, svc: svc, release: release,
			attempt: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error) {
				return s.ob.Attempt(ctx, svc, m, req)
			},
			recover: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error) {
				return s.ob.Recover(ctx, svc, m)
			},
			stored: func(ctx context.Context) { s.watch(ctx, svc) },
			handed: func(res app.SendResult, err error) (wire.Sent, error) {
				return app.Sent(res, err, req.AwaitReply > 0)
			}}, nil
	}
	n, release, err := s.node(dest, o, notes)
	if err != nil {
		return way{}, err
	}
	q := o.Query
	var far struct {
		sent wire.Sent
		ok   bool
	}
	send := func(ctx context.Context, req app.SendRequest) (app.SendResult, error) {
		if err := s.decide(ctx, o, dest, from); err != nil {
			return app.SendResult{}, err
		}
		started := time.Now()
		// The far side's hand-over is recorded the moment it says so (its
		// handed event), before the wait after it, as one here is
		// (req.Handed); its events still reach whoever asked for them.
		told := wire.SendEventsFrom(ctx)
		ctx = wire.WithSendEvents(ctx, func(ev wire.SendEvent) {
			if ev.SendEvent == wire.SendHanded && ev.Receipt != nil && req.Handed != nil {
				if res, err := hostResult(*ev.Receipt); err == nil {
					res.Started, res.Elapsed = started, time.Duration(ev.Receipt.ElapsedMs)*time.Millisecond
					req.Handed(res)
				}
			}
			if told != nil {
				told(ev)
			}
		})
		fq := q
		fq.Settled = req.Settled // a target still starting is refused there
		sent, err := n.Send(ctx, fq)
		if err != nil {
			return app.SendResult{}, err
		}
		far.sent, far.ok = sent, true
		res, err := hostResult(sent.Receipt)
		// The far side's hand-over ended elapsedMs after it began (its
		// wait came after): so is the delivered line.
		res.Started, res.Elapsed = started, time.Duration(sent.Receipt.ElapsedMs)*time.Millisecond
		return res, err
	}
	req := app.SendRequest{ConfirmOptions: app.ConfirmOptions{Wait: q.Wait}, AwaitReply: q.AwaitReply}
	return way{host: dest, address: q.Address, release: release,
		attempt: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error) {
			return s.ob.AttemptElsewhere(ctx, m, req, send)
		},
		recover: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error) {
			return s.ob.Recover(ctx, nil, m)
		},
		handed: func(_ app.SendResult, err error) (wire.Sent, error) {
			if !far.ok {
				return wire.Sent{}, err
			}
			return far.sent, nil
		}}, nil
}

// hostResult is a far side's receipt as the result the outbox records:
// the receipt's words, the take-up and the reply; an ok-false receipt's
// refusal (no_reply, wait_timeout) is the error beside it.
func hostResult(out wire.Receipt) (app.SendResult, error) {
	res := app.SendResult{Receipt: domain.Receipt{Outcome: out.Outcome, Transport: out.Transport, Detail: out.Detail, MsgID: out.MsgID, ClaudeResult: out.ClaudeResult}}
	res.Outcome = domain.ParseOutcome(out.Outcome)
	res.Confirmed, res.ConfirmNote = out.Confirmed, out.ConfirmNote
	if w := out.Wait; w != nil && w.TakenUpAt != "" {
		res.TakenUpAt, _ = time.Parse(time.RFC3339Nano, w.TakenUpAt)
	}
	if r := out.Reply; r != nil {
		at, _ := time.Parse(time.RFC3339Nano, r.At)
		res.Reply = &domain.Inbound{From: r.From, FromName: r.FromName, Text: r.Text, At: at, Truncated: r.Truncated}
	}
	if r := out.Refusal; r != nil {
		reason, err := domain.ParseReason(r.Reason)
		if err != nil {
			reason = domain.ReasonOutcomeUnknown
		}
		return res, &domain.Refusal{Reason: reason, Detail: r.Detail}
	}
	return res, nil
}

// storedOrder is o as the outbox keeps it beside the message: what the
// message's own columns hold (address, text, key, host) left out.
func storedOrder(o wire.SendOrder) ([]byte, error) {
	o.Query.Address, o.Query.Text, o.Key, o.Host = "", "", "", ""
	return json.Marshal(o)
}

// loadOrder is m's stored order with m's address, text, key and host.
func loadOrder(m ports.OutboxMessage) (wire.SendOrder, error) {
	var o wire.SendOrder
	if err := json.Unmarshal(m.Request, &o); err != nil {
		return o, err
	}
	o.Query.Address, o.Query.Text, o.Key, o.Host = m.Address, m.Text, m.Key, m.Host
	return o, nil
}

// waits reports whether a stored order asks to wait after the hand-over
// (--wait, --await-reply).
func waits(request []byte) bool {
	var o wire.SendOrder
	return json.Unmarshal(request, &o) == nil && o.Waits()
}

// durable keeps a durable send: stored once per key, then attempted at
// once unless an older message to the same address (on the same host)
// still waits (order per target). A hand-over answers with the receipt a
// plain send gives and the outbox object; a target that cannot take it
// now with the kept message (outcome "stored"); anything else with the
// send's refusal. With held (the trust policy's hold) it is stored
// awaiting approval and not attempted (outcome "awaiting_approval").
func (s *Server) durable(ctx context.Context, o wire.SendOrder, dest domain.Dest, stored func(Ref), held *domain.Decision) Answer {
	if s.ob == nil {
		return failed(OutboxUnavailable(s.storeErr))
	}
	var notes []string
	noted := func(a Answer) Answer {
		a.Notes = append(notes, a.Notes...)
		return a
	}
	w, err := s.wayOf(o, dest, false, &notes)
	if err != nil {
		return noted(failed(err))
	}
	defer w.release()
	if _, node := dest.Node(); node && o.Key == "" {
		o.Key = autoKey() // the node keeps one message per sender and key
	}
	body, err := storedOrder(o)
	if err != nil {
		return noted(failed(err))
	}
	host := dest.String()
	s.mu.Lock() // with the loop's claim: a new message is this request's to attempt first
	m, created, err := s.ob.Submit(ctx, w.svc, app.DurableRequest{Key: o.Key, Address: w.address, Host: host, Text: o.Query.Text, TTL: o.Durable, Deadline: o.Expires, Request: body,
		Sender: o.Sender, Held: held, Retries: o.Retries, Wait: o.Query.Wait > 0})
	if err == nil && created && held == nil {
		s.inflight[m.ID] = true
	}
	s.mu.Unlock()
	if err != nil {
		if _, ok := domain.AsRefusal(err); ok {
			return noted(failed(err))
		}
		if ctx.Err() != nil { // the service stops (SIGTERM), or the client hung up
			err = fmt.Errorf("the request ended before its message was stored (%v)", context.Cause(ctx))
		}
		return noted(failed(OutboxUnavailable(err)))
	}
	if !created {
		return noted(kept(m, app.SendResult{}, true))
	}
	stored(*refOf(m, false))
	keptNew := func(a Answer) Answer {
		if n := notWaited(o, a); n != "" {
			a.Notes = append(a.Notes, n)
		}
		return noted(a)
	}
	if held != nil {
		s.logMessage(m, m.State, m.Reason)
		return keptNew(kept(m, app.SendResult{}, false))
	}
	defer s.poke()
	defer s.release(m.ID)
	older, err := s.store.List(ctx, ports.OutboxFilter{Target: w.address, States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}})
	// One already in its node's mail holds up none: the bus keeps their order.
	older = slices.DeleteFunc(older, func(o ports.OutboxMessage) bool { return o.Host != host || posted(o) })
	if err == nil && len(older) > 1 {
		n := fmt.Sprintf("%d older messages", len(older)-1)
		if len(older) == 2 {
			n = "1 older message"
		}
		m.Reason = "waits behind " + n + " to the same address, delivered in order"
		return keptNew(kept(m, app.SendResult{}, false))
	}
	id := m.ID
	m, res, err := w.attempt(ctx, m)
	if m.ID == 0 {
		return noted(failed(unrecorded(id, err)))
	}
	if m.State == domain.OutboxStored && w.stored != nil {
		w.stored(ctx)
	}
	switch {
	case m.State == domain.OutboxStored, m.State == domain.OutboxAwaitingApproval:
		return keptNew(kept(m, res, false))
	case m.State.Handed():
		if err != nil && !errors.As(err, new(*domain.Refusal)) {
			return noted(failed(unrecorded(id, err)))
		}
		sent, err := w.handed(res, err)
		if err != nil {
			return noted(failed(err))
		}
		sent.Receipt.Sender = senderDoc(m.Sender)
		return noted(Answer{Done: true, Sent: &sent, Ref: refOf(m, false)})
	}
	if err == nil {
		return noted(kept(m, res, false)) // its TTL was over before it could be tried: expired
	}
	notes = append(notes, fmt.Sprintf("peerctl: outbox: message %d is %s", m.ID, m.State))
	return noted(failed(err))
}

// notWaited is the note of a new durable message of order o kept, not
// handed over now (a): the wait its order asks for (--wait,
// --await-reply) did not happen now; the service does it when it hands
// the message over, and records what came of it in the outbox. "" when
// the order does not wait or the message is not kept for later.
func notWaited(o wire.SendOrder, a Answer) string {
	if !o.Waits() || !a.Kept || a.Ref == nil {
		return ""
	}
	st, err := domain.ParseOutboxState(a.Ref.State)
	if err != nil || !st.Pending() && st != domain.OutboxAwaitingApproval {
		return ""
	}
	what, flag := "the end of the turn on it", "--wait"
	if o.Query.AwaitReply > 0 {
		what, flag = "its reply", "--await-reply"
	}
	return fmt.Sprintf("peerctl: note: nothing was waited for (%s): message %d was not handed over now; the service waits for %s when it hands it over, and records it: peerctl outbox show %d",
		flag, a.Ref.ID, what, a.Ref.ID)
}

// unrecorded is the refusal of durable message id, stored, whose attempt
// could not be recorded (err, the outbox's): outcome_unknown, naming the
// message to look at, never "nothing was stored".
func unrecorded(id int64, err error) error {
	return domain.Refuse(domain.ReasonOutcomeUnknown, "message %d is in the outbox, and what its attempt did could not be recorded (%v): it may have been delivered; look before sending again: peerctl outbox show %d",
		id, err, id)
}

// refOf is m as a receipt's outbox object (dup: a repeated key's).
func refOf(m ports.OutboxMessage, dup bool) *Ref {
	return &Ref{ID: m.ID, State: m.State.String(), Key: []byte(m.Key), Address: []byte(m.Address), Host: m.Host, Reason: []byte(m.Reason),
		ExpiresAt: wire.RFC3339(m.Expires), Duplicate: dup, Rule: m.Rule}
}

// senderDoc is f as a receipt's sender (nil when its entrance is unknown).
func senderDoc(f domain.Sender) *wire.Sender {
	if f.Entrance() == domain.EntranceUnknown {
		return nil
	}
	return wire.SenderOf(f)
}

// kept answers with a durable message that is kept, not (yet) handed
// over: outcome "stored"; one whose TTL was over before it could be
// tried, "expired"; for a repeated key the first message as it stands
// (app.DurableOutcome).
func kept(m ports.OutboxMessage, res app.SendResult, dup bool) Answer {
	outcome := app.DurableOutcome(m)
	t := res.Target
	out := wire.Receipt{OK: true, Outcome: outcome, Transport: m.Transport, Detail: m.Reason, MsgID: m.MsgID,
		SessionID: m.SessionID, ElapsedMs: res.Elapsed.Milliseconds(), Sender: senderDoc(m.Sender)}
	if t.ID() != "" {
		out.Harness, out.SessionID, out.PID, out.Name, out.Endpoint = t.Harness().String(), t.ID(), t.PID(), t.Name(), t.Endpoint().String()
	}
	return Answer{Done: true, Sent: &wire.Sent{Receipt: out}, Kept: true, Ref: refOf(m, dup)}
}

// job runs one attempt (or the check of an interrupted one) of m with its
// stored order, logs what became of it, and returns the message as it now
// stands.
func (s *Server) job(m ports.OutboxMessage, recover bool) ports.OutboxMessage {
	refuse := func(why string) ports.OutboxMessage {
		got, _ := s.store.Move(s.life, m.ID, []domain.OutboxState{m.State}, ports.OutboxChange{State: domain.OutboxRefused, At: s.now(), Reason: why})
		return got
	}
	o, err := loadOrder(m)
	if err != nil {
		return refuse(fmt.Sprintf("its stored request cannot be read (%v)", err))
	}
	dest, err := destOf(o.Host)
	if err != nil {
		return refuse(fmt.Sprintf("its host cannot be read (%v)", err))
	}
	var notes []string
	w, err := s.wayOf(o, dest, m.ApprovedBy != "", &notes)
	if err != nil {
		return refuse(err.Error())
	}
	defer w.release()
	var done ports.OutboxMessage
	if recover {
		done, err = w.recover(s.life, m)
	} else {
		done, _, err = w.attempt(s.life, m)
	}
	if done.ID == 0 {
		why := "the attempt could not be recorded"
		if err != nil {
			why = err.Error()
		}
		return refuse(why)
	}
	if done.State == domain.OutboxStored && w.stored != nil {
		w.stored(s.life)
	}
	if done.State != m.State || recover {
		s.logMessage(m, done.State, done.Reason)
	}
	return done
}

// logMessage writes to the log that message m's state is now state:
// "message 7 to "reviewer": delivered: REASON" (no ": REASON" without one).
func (s *Server) logMessage(m ports.OutboxMessage, state domain.OutboxState, reason string) {
	line := fmt.Sprintf("peerctl serve: message %d to %q: %s", m.ID, app.OutboxTarget(m.Address, m.Host), state)
	if reason != "" {
		line += ": " + wire.Safe(reason)
	}
	fmt.Fprintln(s.o.Log, line)
}
