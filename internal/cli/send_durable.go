package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// maxKey bounds an idempotency key, in bytes.
const maxKey = 200

// durableFlags are send's --durable and --key.
type durableFlags struct {
	ttl time.Duration
	key string
}

func (d *durableFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&d.ttl, "durable", 0, "keep it (peerctl serve) until the target can take it, at most this long")
	f.Lookup("durable").NoOptDefVal = app.DefaultTTL.String()
	f.StringVar(&d.key, "key", "", "idempotency key: a repeat answers with the first message (implies --durable)")
}

// on reports whether the send is durable.
func (d *durableFlags) on() bool { return d.ttl > 0 }

// validate checks the flags against send's others; --key alone means
// --durable with the default TTL.
func (d *durableFlags) validate(cmd *cobra.Command, dryRun bool) error {
	if fl := cmd.Flags().Lookup("durable"); fl.Changed && d.ttl <= 0 {
		return usageError{fmt.Errorf("--durable %s: want a positive time to live such as 24h", fl.Value)}
	}
	if cmd.Flags().Changed("key") {
		if d.key == "" || len(d.key) > maxKey {
			return usageError{fmt.Errorf("--key: want 1 to %d bytes, got %d", maxKey, len(d.key))}
		}
		if d.ttl <= 0 {
			d.ttl = app.DefaultTTL
		}
	}
	if !d.on() {
		return nil
	}
	switch {
	case dryRun:
		return usageError{errors.New("--durable and --dry-run: a dry run stores nothing; leave one out")}
	}
	return nil
}

// sendForward hands the send to peerctl serve when it should go there: a
// durable one always (the service is started on demand), a plain one with
// the default transport when a service is running (its warm courier);
// never with PEERCTL_SERVE=off, where a durable send is refused. handled
// is false when the send is to run here.
func (c *cli) sendForward(ctx context.Context, d durableFlags, plain bool, text string) (handled bool, err error) {
	if c.srv != nil {
		return false, nil
	}
	if !d.on() {
		if !plain || c.serveOff() {
			return false, nil
		}
		conn, err := c.dialServe(ctx, false)
		if err != nil {
			return false, nil
		}
		if err := c.forward(ctx, conn, text); !errors.Is(err, errForwardUnsent) {
			return true, err
		}
		return false, nil // nothing reached the service: send it here
	}
	if c.getenv(serveEnv) == "off" {
		return true, outboxUnavailable(fmt.Errorf("send --durable needs peerctl serve, and %s=off", serveEnv))
	}
	if !serveSupported {
		return true, outboxUnavailable(errors.New("peerctl serve is not available on this system"))
	}
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return true, outboxUnavailable(err)
	}
	err = c.forward(ctx, conn, text)
	if errors.Is(err, errForwardUnsent) {
		return true, outboxUnavailable(err)
	}
	return true, err
}

func refOf(m ports.OutboxMessage, dup bool) *wire.OutboxRef {
	return &wire.OutboxRef{ID: m.ID, State: m.State.String(), Key: m.Key, Address: m.Address, Host: m.Host, ExpiresAt: outboxTime(m.Expires), Duplicate: dup}
}

// durableWay is where a durable message is attempted: here, with a
// Service (localWay), or on another machine by its own peerctl (hostWay).
type durableWay struct {
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
	// handed prints a hand-over's receipt (c.outbox set) from the attempt's
	// result and error.
	handed func(res app.SendResult, err error) error
}

// localWay attempts req with svc on this machine.
func (c *cli) localWay(svc *app.Service, req app.SendRequest, asJSON bool) durableWay {
	s := c.srv
	return durableWay{address: req.Address, svc: svc,
		attempt: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error) {
			return s.ob.Attempt(ctx, svc, m, req)
		},
		recover: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error) {
			return s.ob.Recover(ctx, svc, m)
		},
		stored: func(ctx context.Context) { s.watch(ctx, svc) },
		handed: func(res app.SendResult, err error) error {
			sent, err := app.Sent(res, err, req.AwaitReply > 0)
			if err != nil {
				return err
			}
			return c.printSent(sent, asJSON, req.AwaitReply > 0)
		}}
}

// hostWay attempts q on dest's peerctl (send --durable --host): its
// receipt is the outbox's, printed as send --host prints it.
func (c *cli) hostWay(dest domain.Dest, q wire.SendQuery, asJSON bool) durableWay {
	s := c.srv
	var far struct {
		sent wire.Sent
		ok   bool
	}
	send := func(ctx context.Context, _ app.SendRequest) (app.SendResult, error) {
		n, err := c.node(dest)
		if err != nil {
			return app.SendResult{}, err
		}
		sent, err := n.Send(ctx, q)
		if err != nil {
			return app.SendResult{}, err
		}
		far.sent, far.ok = sent, true
		return hostResult(sent.Receipt)
	}
	req := app.SendRequest{ConfirmOptions: app.ConfirmOptions{Wait: q.Wait}, AwaitReply: q.AwaitReply}
	return durableWay{host: dest, address: q.Address,
		attempt: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, app.SendResult, error) {
			return s.ob.AttemptElsewhere(ctx, m, req, send)
		},
		recover: func(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, error) {
			return s.ob.Recover(ctx, nil, m)
		},
		handed: func(_ app.SendResult, err error) error {
			if !far.ok {
				return err
			}
			return c.printSent(far.sent, asJSON, q.AwaitReply > 0)
		}}
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

// sendDurable is send in the service: a stored message's attempt or check
// (c.job), or a durable send: stored once per key, then attempted at once
// unless an older message to the same address (on the same host) still
// waits (order per target). A hand-over prints the receipt a plain send
// prints, with the outbox object; a target that cannot take it now prints
// outcome "stored" (exit 0); anything else is the send's refusal.
func (c *cli) sendDurable(ctx context.Context, way durableWay, text string, d durableFlags, asJSON bool) error {
	s := c.srv
	if j := c.job; j != nil {
		if j.recover {
			j.done, j.err = way.recover(ctx, j.msg)
		} else {
			j.done, _, j.err = way.attempt(ctx, j.msg)
		}
		if j.done.State == domain.OutboxStored && way.stored != nil {
			way.stored(ctx)
		}
		return nil
	}
	if s.ob == nil {
		return outboxUnavailable(s.storeErr)
	}
	body, err := json.Marshal(storedSend{Argv: c.args, Env: c.environ()})
	if err != nil {
		return err
	}
	host := way.host.String()
	s.mu.Lock() // with the loop's claim: a new message is this request's to attempt first
	m, created, err := s.ob.Submit(ctx, way.svc, app.DurableRequest{Key: d.key, Address: way.address, Host: host, Text: text, TTL: d.ttl, Request: body})
	if err == nil && created {
		s.inflight[m.ID] = true
	}
	s.mu.Unlock()
	if err != nil {
		if _, ok := domain.AsRefusal(err); ok || errors.Is(err, domain.ErrBadAddress) {
			return err
		}
		return outboxUnavailable(err)
	}
	if !created {
		return c.printStored(m, app.SendResult{}, true, asJSON)
	}
	defer s.poke()
	defer s.release(m.ID)
	older, err := s.store.List(ctx, ports.OutboxFilter{Target: way.address, States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}})
	older = slices.DeleteFunc(older, func(o ports.OutboxMessage) bool { return o.Host != host })
	if err == nil && len(older) > 1 {
		m.Reason = fmt.Sprintf("waits behind %s to the same address, delivered in order", plural(len(older)-1, "older message"))
		return c.printStored(m, app.SendResult{}, false, asJSON)
	}
	m, res, err := way.attempt(ctx, m)
	if m.ID == 0 {
		return outboxUnavailable(err)
	}
	if m.State == domain.OutboxStored && way.stored != nil {
		way.stored(ctx)
	}
	c.outbox = refOf(m, false)
	switch {
	case m.State == domain.OutboxStored:
		return c.printStored(m, res, false, asJSON)
	case m.State.Handed():
		if err != nil && !errors.As(err, new(*domain.Refusal)) {
			return outboxUnavailable(err)
		}
		return way.handed(res, err)
	}
	if err == nil {
		return c.printStored(m, res, false, asJSON) // its TTL was over before it could be tried: expired
	}
	fmt.Fprintf(c.stderr, "peerctl: outbox: message %d is %s\n", m.ID, m.State)
	return err
}

// printStored prints a durable send that is kept, not (yet) handed over:
// outcome "stored" with the outbox object; one whose TTL was over before
// it could be tried, "expired"; for a repeated key the first message as
// it stands (app.DurableOutcome).
func (c *cli) printStored(m ports.OutboxMessage, res app.SendResult, dup bool, asJSON bool) error {
	outcome := app.DurableOutcome(m)
	t := res.Target
	out := wire.Receipt{OK: true, Outcome: outcome, Transport: m.Transport, Detail: m.Reason, Outbox: refOf(m, dup), MsgID: m.MsgID,
		SessionID: m.SessionID, ElapsedMs: res.Elapsed.Milliseconds()}
	if t.ID() != "" {
		out.Harness, out.SessionID, out.PID, out.Name, out.Endpoint = t.Harness().String(), t.ID(), t.PID(), t.Name(), t.Endpoint().String()
	}
	if asJSON {
		return c.writeJSON(out)
	}
	switch {
	case dup:
		fmt.Fprintf(c.stdout, "%s: message %d (key %q) to %q is already in the outbox, %s; nothing new was stored or sent\n", outcome, m.ID, safe(m.Key),
			safe(outboxTarget(m.Address, m.Host)), m.State)
	case m.State.Pending():
		fmt.Fprintf(c.stdout, "stored: message %d for %q is kept until %s and delivered when the session can take it\n", m.ID, safe(m.Address), outboxTime(m.Expires))
	default:
		fmt.Fprintf(c.stdout, "%s: message %d for %q was not delivered\n", outcome, m.ID, safe(outboxTarget(m.Address, m.Host)))
	}
	if m.Reason != "" {
		fmt.Fprintf(c.stdout, "why: %s\n", safe(m.Reason))
	}
	fmt.Fprintf(c.stdout, "follow it: peerctl outbox show %d\n", m.ID)
	return nil
}

// durableSend is one durable send a long-lived command (the MCP server,
// the relay) hands to peerctl serve.
type durableSend struct {
	to, text, key, transport, from string
	host                           string // another machine's Dest ("" for this one)
	seconds                        int
	timeout, confirm               time.Duration
}

// serveSend runs d in peerctl serve (started on demand) as `peerctl send
// --json --durable=<seconds>s --key K` with this command's harness flags,
// and returns its receipt; a refusal comes back as a *domain.Refusal
// (outbox_unavailable when no service can keep it).
func (c *cli) serveSend(ctx context.Context, d durableSend) (wire.Receipt, error) {
	if _, err := domain.NewMessage(d.text); err != nil {
		return wire.Receipt{}, err
	}
	if c.serveOff() {
		return wire.Receipt{}, outboxUnavailable(fmt.Errorf("a durable send needs peerctl serve, and %s=off or this system has none", serveEnv))
	}
	var argv []string
	for name, v := range c.flagValues() {
		if v != "" {
			argv = append(argv, "--"+name, v)
		}
	}
	argv = append(argv, "send", "--json")
	if d.timeout > 0 {
		argv = append(argv, "--timeout", d.timeout.String())
	}
	if d.confirm > 0 {
		argv = append(argv, "--confirm-timeout", d.confirm.String())
	}
	if d.transport != "" {
		argv = append(argv, "--transport", d.transport)
	}
	if d.from != "" {
		argv = append(argv, "--from", d.from)
	}
	if d.seconds > 0 {
		argv = append(argv, fmt.Sprintf("--durable=%ds", d.seconds))
	}
	if d.key != "" {
		argv = append(argv, "--key", d.key)
	}
	if d.host != "" {
		argv = append(argv, "--host", d.host)
	}
	argv = append(argv, "--", d.to, "-")
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return wire.Receipt{}, outboxUnavailable(err)
	}
	a, err := c.ask(ctx, conn, argv, d.text)
	if errors.Is(err, errForwardUnsent) {
		return wire.Receipt{}, outboxUnavailable(err)
	}
	if err != nil {
		return wire.Receipt{}, err
	}
	if a.Code != wire.ExitOK {
		return wire.Receipt{}, answerRefusal(a)
	}
	var out wire.Receipt
	if err := json.Unmarshal([]byte(a.Stdout), &out); err != nil {
		return wire.Receipt{}, fmt.Errorf("the service's receipt is not JSON: %w", err)
	}
	return out, nil
}

// answerRefusal reads a failed run's answer back into a refusal: its
// --json refusal on stdout when there is one, else its stderr's first line.
func answerRefusal(a serveAnswer) error {
	var r struct {
		Refusal struct{ Reason, Detail string } `json:"refusal"`
	}
	if json.Unmarshal([]byte(a.Stdout), &r) == nil && r.Refusal.Reason != "" {
		if reason, err := domain.ParseReason(r.Refusal.Reason); err == nil {
			return &domain.Refusal{Reason: reason, Detail: r.Refusal.Detail}
		}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(a.Stderr), "\n")
	return errors.New(strings.TrimPrefix(line, "peerctl: "))
}
