package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
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
func (d *durableFlags) validate(cmd *cobra.Command, dryRun bool, hosts []string) error {
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
	case len(hosts) > 0:
		return usageError{errors.New("--durable with --host is not supported yet: run the durable send on that machine (ssh DEST peerctl send --durable ...)")}
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

// outboxRef is the receipt's "outbox" object (docs/OUTPUT.md).
type outboxRef struct {
	ID        int64  `json:"id"`
	State     string `json:"state"`
	Key       string `json:"key,omitempty"`
	ExpiresAt string `json:"expiresAt"`
	// Duplicate is true when --key named a message already in the outbox:
	// this is that message, nothing new was stored or sent.
	Duplicate bool `json:"duplicate,omitempty"`
}

func refOf(m ports.OutboxMessage, dup bool) *outboxRef {
	return &outboxRef{ID: m.ID, State: m.State.String(), Key: m.Key, ExpiresAt: outboxTime(m.Expires), Duplicate: dup}
}

// sendDurable is send in the service: a stored message's attempt or check
// (c.job), or a durable send: stored once per key, then attempted at once
// unless an older message to the same address still waits (order per
// target). A hand-over prints the receipt a plain send prints, with the
// outbox object; a target that cannot take it now prints outcome
// "stored" (exit 0); anything else is the send's refusal.
func (c *cli) sendDurable(ctx context.Context, svc *app.Service, req app.SendRequest, d durableFlags, transport string, asJSON bool) error {
	s := c.srv
	if j := c.job; j != nil {
		if j.recover {
			j.done, j.err = s.ob.Recover(ctx, svc, j.msg)
		} else {
			j.done, _, j.err = s.ob.Attempt(ctx, svc, j.msg, req)
		}
		if j.done.State == domain.OutboxStored {
			s.watch(ctx, svc)
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
	s.mu.Lock() // with the loop's claim: a new message is this request's to attempt first
	m, created, err := s.ob.Submit(ctx, app.DurableRequest{Key: d.key, Address: req.Address, Text: req.Text, TTL: d.ttl, Request: body})
	if err == nil && created {
		s.inflight[m.ID] = true
	}
	s.mu.Unlock()
	if err != nil {
		if _, ok := domain.AsRefusal(err); ok {
			return err
		}
		return outboxUnavailable(err)
	}
	if !created {
		return c.printStored(m, app.SendResult{}, true, asJSON)
	}
	defer s.poke()
	defer s.release(m.ID)
	older, err := s.store.List(ctx, ports.OutboxFilter{Target: req.Address, States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}})
	if err == nil && len(older) > 1 {
		m.Reason = fmt.Sprintf("waits behind %s to the same address, delivered in order", plural(len(older)-1, "older message"))
		return c.printStored(m, app.SendResult{}, false, asJSON)
	}
	m, res, err := s.ob.Attempt(ctx, svc, m, req)
	if m.ID == 0 {
		return outboxUnavailable(err)
	}
	if m.State == domain.OutboxStored {
		s.watch(ctx, svc)
	}
	c.outbox = refOf(m, false)
	switch {
	case m.State == domain.OutboxStored:
		return c.printStored(m, res, false, asJSON)
	case m.State.Handed():
		if err != nil && !errors.As(err, new(*domain.Refusal)) {
			return outboxUnavailable(err)
		}
		if req.AwaitReply > 0 {
			return c.printReplied(res, err, asJSON)
		}
		if err != nil {
			return err
		}
		return c.printWaited(res, transport, asJSON)
	}
	fmt.Fprintf(c.stderr, "peerctl: outbox: message %d is %s\n", m.ID, m.State)
	return err
}

// printStored prints a durable send that is kept, not (yet) handed over:
// outcome "stored" with the outbox object, or for a repeated key the first
// message as it stands (outcome "stored" while it waits, else its receipt's
// word or its state).
func (c *cli) printStored(m ports.OutboxMessage, res app.SendResult, dup bool, asJSON bool) error {
	outcome := "stored"
	switch {
	case m.State.Pending():
	case m.Outcome != "":
		outcome = m.Outcome
	default:
		outcome = m.State.String()
	}
	t := res.Target
	out := receiptJSON{OK: true, Outcome: outcome, Transport: m.Transport, Detail: m.Reason, Outbox: refOf(m, dup), MsgID: m.MsgID,
		SessionID: m.SessionID, ElapsedMs: res.Elapsed.Milliseconds()}
	if t.ID() != "" {
		out.Harness, out.SessionID, out.PID, out.Name, out.Endpoint = t.Harness().String(), t.ID(), t.PID(), t.Name(), t.Endpoint().String()
	}
	if asJSON {
		return c.writeJSON(out)
	}
	if dup {
		fmt.Fprintf(c.stdout, "%s: message %d (key %q) is already in the outbox, %s; nothing new was stored or sent\n", outcome, m.ID, safe(m.Key), m.State)
	} else {
		fmt.Fprintf(c.stdout, "stored: message %d for %q is kept until %s and delivered when the session can take it\n", m.ID, safe(m.Address), outboxTime(m.Expires))
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
	seconds                        int
	timeout, confirm               time.Duration
}

// serveSend runs d in peerctl serve (started on demand) as `peerctl send
// --json --durable=<seconds>s --key K` with this command's harness flags,
// and returns its receipt; a refusal comes back as a *domain.Refusal
// (outbox_unavailable when no service can keep it).
func (c *cli) serveSend(ctx context.Context, d durableSend) (receiptJSON, error) {
	if _, err := domain.NewMessage(d.text); err != nil {
		return receiptJSON{}, err
	}
	if c.serveOff() {
		return receiptJSON{}, outboxUnavailable(fmt.Errorf("a durable send needs peerctl serve, and %s=off or this system has none", serveEnv))
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
	argv = append(argv, "--", d.to, "-")
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return receiptJSON{}, outboxUnavailable(err)
	}
	a, err := c.ask(ctx, conn, argv, d.text)
	if errors.Is(err, errForwardUnsent) {
		return receiptJSON{}, outboxUnavailable(err)
	}
	if err != nil {
		return receiptJSON{}, err
	}
	if a.Code != exitOK {
		return receiptJSON{}, answerRefusal(a)
	}
	var out receiptJSON
	if err := json.Unmarshal([]byte(a.Stdout), &out); err != nil {
		return receiptJSON{}, fmt.Errorf("the service's receipt is not JSON: %w", err)
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
