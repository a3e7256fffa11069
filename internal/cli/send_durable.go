package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports/wire"
)

// maxKey bounds an idempotency key, in bytes.
const maxKey = 200

// checkKey checks an idempotency key at every entrance (send --key, the
// relay's "key", the MCP tool's key): 1 to maxKey bytes with no control
// character (C0, DEL, C1), as --from; unlike a name, a key is bytes: one
// that is not UTF-8 is kept exactly, and two keys that differ only there
// are two keys. Its error reads after the key's name: ": want 1 to 200
// bytes, got 0", ` "k\x1b": want a key without control characters ...`.
func checkKey(key string) error {
	switch {
	case key == "" || len(key) > maxKey:
		return fmt.Errorf(": want 1 to %d bytes, got %d", maxKey, len(key))
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return fmt.Errorf(" %q: want a key without control characters (other bytes, UTF-8 or not, are kept exactly)", key)
	}
	return nil
}

// durableFlags are send's --durable and --key.
type durableFlags struct {
	ttl time.Duration
	key string
	// held is the trust policy's decision here to hold the send (nil:
	// none), carried in its order: the service never decides weaker.
	held *domain.Decision
}

// heldBy is the decision to hold that err carries (nil: none).
func heldBy(err error) *domain.Decision {
	if d, ok := domain.AsHeld(err); ok {
		return &d
	}
	return nil
}

func (d *durableFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&d.ttl, "durable", 0, "keep it (peerctl serve) until the target can take it, at most this long")
	f.Lookup("durable").NoOptDefVal = shortDuration(app.DefaultTTL)
	f.StringVar(&d.key, "key", "", "idempotency key: a repeat gets the first message (implies --durable)")
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
		if err := checkKey(d.key); err != nil {
			return usageError{fmt.Errorf("--key%w", err)}
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
		// Named as given: --key alone implies --durable.
		flag := "--durable"
		if !cmd.Flags().Changed("durable") {
			flag = "--key"
		}
		return usageError{fmt.Errorf("%s and --dry-run: a dry run stores nothing; leave one out", flag)}
	}
	return nil
}

// sendForward hands the send (q, to dest) to peerctl serve when it
// should go there: a durable one always (the service is started on
// demand), a plain one with the default transport when a service is
// running (its warm courier) and --debug does not ask for the send's
// trail; never with PEERCTL_SERVE=off, where a durable send is refused.
// handled is false when the send is to run here. A plain send is decided
// by the trust policy here, before its order is dialled (a durable or far
// one before sendForward is called), and the service decides again with
// the order's sender; a held one goes to the service as a durable one
// (app.DefaultTTL once approved), kept there awaiting approval. A trace
// ctx carries (app.WithSendTrace) is told, while the service has the
// send, of its hand-over and wait as they happen (the service's Talk
// lines); talk (nil: none) is the one that printed them for a person.
func (c *serveClient) sendForward(ctx context.Context, d durableFlags, dest domain.Dest, q wire.SendQuery, asJSON bool, talk *waitTalk) (handled bool, err error) {
	awaited := q.AwaitReply > 0
	if !d.on() {
		if !dest.IsLocal() || q.Transport != "" || q.DryRun || awaited || c.serveOff() || c.debug.send {
			return false, nil // --debug's trail is this process's to print
		}
		conn, err := c.dialServe(ctx, false)
		if err != nil {
			return false, nil
		}
		if err := c.allowedTo(ctx, q.Address, dest); c.holds(err, q) {
			_ = conn.Close()
			return c.sendForward(ctx, durableFlags{ttl: app.DefaultTTL, held: heldBy(err)}, dest, q, asJSON, talk)
		} else if err != nil {
			_ = conn.Close()
			return true, err
		}
		o, err := c.order(ctx, q, dest, d)
		if err != nil {
			_ = conn.Close()
			return true, err
		}
		a, err := c.ask(ctx, conn, serve.Request{Op: "send", Send: &o, Talk: app.SendTraceFrom(ctx) != nil})
		if errors.Is(err, errForwardUnsent) {
			return false, nil // nothing reached the service: send it here
		}
		if err != nil {
			return true, err
		}
		return true, c.answered(a, asJSON, awaited, talk)
	}
	if c.getenv(serveEnv) == "off" {
		return true, outboxUnavailable(fmt.Errorf("send --durable needs peerctl serve, and %s=off", serveEnv))
	}
	if !serveSupported {
		return true, outboxUnavailable(errors.New("peerctl serve is not available on this system"))
	}
	if err := c.checkHosts([]domain.Dest{dest}); err != nil {
		return true, err
	}
	o, err := c.order(ctx, q, dest, d)
	if err != nil {
		return true, err
	}
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return true, outboxUnavailable(err)
	}
	a, err := c.ask(ctx, conn, serve.Request{Op: "send", Send: &o, Talk: app.SendTraceFrom(ctx) != nil})
	if errors.Is(err, errForwardUnsent) {
		return true, outboxUnavailable(err)
	}
	if err != nil {
		return true, err
	}
	return true, c.answered(a, asJSON, awaited, talk)
}

// order is a send of q to dest (durable as d says) as the service takes
// it, with this command's settings and sender (who).
func (c *serveClient) order(ctx context.Context, q wire.SendQuery, dest domain.Dest, d durableFlags) (wire.SendOrder, error) {
	set, err := c.settings(!dest.IsLocal())
	return wire.SendOrder{Query: q, Host: dest.String(), Durable: d.ttl, Key: d.key, Settings: set, Sender: c.who(ctx), Decided: d.held}, err
}

// holds reports whether err is the trust policy's hold of send q that
// peerctl serve can keep for approval: not a dry run, and the service not
// kept off (PEERCTL_SERVE=off: the not_allowed refusal stands).
func (c *serveClient) holds(err error, q wire.SendQuery) bool {
	return errors.Is(err, domain.ErrHeld) && !q.DryRun && !c.serveOff()
}

// durableSend is one durable send a long-lived command (the MCP server,
// the relay) hands to peerctl serve.
type durableSend struct {
	to, text, key, transport, from string
	host                           domain.Dest // another machine (the zero Dest: this one)
	seconds                        int
	timeout, confirm               time.Duration
}

// serveSend runs d in peerctl serve (started on demand) as `peerctl send
// --json --durable=<seconds>s --key K` with this command's harness flags
// would, and returns its receipt; a refusal comes back as a
// *domain.Refusal (outbox_unavailable when no service can keep it).
func (c *serveClient) serveSend(ctx context.Context, d durableSend) (wire.Receipt, error) {
	if _, err := domain.NewMessage(d.text); err != nil {
		return wire.Receipt{}, err
	}
	if c.serveOff() {
		return wire.Receipt{}, outboxUnavailable(fmt.Errorf("a durable send needs peerctl serve, and %s=off or this system has none", serveEnv))
	}
	held := c.allowedTo(ctx, d.to, d.host)
	if held != nil && !errors.Is(held, domain.ErrHeld) {
		return wire.Receipt{}, held // a hold is kept by the service, which decides again, never weaker
	}
	q := wire.SendQuery{Address: d.to, Text: d.text, Transport: d.transport, From: d.from, Timeout: cmp.Or(d.timeout, defaultSendTimeout),
		ConfirmTimeout: cmp.Or(d.confirm, app.DefaultConfirmTimeout)}
	ttl := app.DefaultTTL
	if d.seconds > 0 {
		ttl = time.Duration(d.seconds) * time.Second
	}
	if err := c.checkHosts([]domain.Dest{d.host}); err != nil {
		return wire.Receipt{}, err
	}
	o, err := c.order(ctx, q, d.host, durableFlags{ttl: ttl, key: d.key, held: heldBy(held)})
	if err != nil {
		return wire.Receipt{}, err
	}
	conn, err := c.dialServe(ctx, true)
	if err != nil {
		return wire.Receipt{}, outboxUnavailable(err)
	}
	a, err := c.ask(ctx, conn, serve.Request{Op: "send", Send: &o})
	switch {
	case errors.Is(err, errForwardUnsent):
		return wire.Receipt{}, outboxUnavailable(err)
	case err != nil:
		return wire.Receipt{}, err
	case a.Refusal != nil:
		return wire.Receipt{}, a.Refusal.Err()
	case a.Error != nil:
		return wire.Receipt{}, errors.New(string(a.Error))
	case a.Sent == nil:
		return wire.Receipt{}, fmt.Errorf("the service gave no receipt: %s", strings.Join(a.Notes, "; "))
	}
	out := a.Sent.Receipt
	out.Outbox = a.Ref.OutboxRef()
	if a.Kept && a.Ref != nil {
		out.Detail = string(a.Ref.Reason)
	}
	if r := out.Refusal; a.Sent.Code != wire.ExitOK && r != nil {
		if reason, err := domain.ParseReason(r.Reason); err == nil {
			return wire.Receipt{}, &domain.Refusal{Reason: reason, Detail: r.Detail}
		}
	}
	return out, nil
}
