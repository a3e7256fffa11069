package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// serveStartWithin bounds an on-demand start of the service: from the
// program's start to its socket answering.
const serveStartWithin = 20 * time.Second

// serveLogName is the on-demand service's log, beside the outbox.
const serveLogName = "serve.log"

// serveClient is a command's client of peerctl serve (send --durable,
// a plain send a running service's warm courier takes, a send the trust
// policy holds, outbox cancel, retry, approve and deny, the MCP server's
// and the relay's durable and held sends): it connects, starting the
// service on demand, hands it one typed request, and prints its answer as
// the command prints the same result made here.
type serveClient struct {
	io      *iostreams
	getenv  func(string) string
	environ func() []string
	// program is the program that runs the service: this one when it has
	// the outbox's store linked in, else peerctl-mcp (runWithStore).
	program func() (string, error)
	// flags are the command's harness flags (settings).
	flags harnessFlagValues
	debug debugOn
	// hostTimeout, checkHosts, allowedTo and who are the factory's: the
	// host timeout, the check of the ssh channel, the trust policy's
	// decision, and who sends (what an order carries, for the service to
	// decide the policy again).
	hostTimeout func() (time.Duration, error)
	checkHosts  func([]domain.Dest) error
	allowedTo   func(ctx context.Context, address string, dest domain.Dest) error
	who         func(ctx context.Context) domain.Sender
}

// serveOff reports whether PEERCTL_SERVE=off keeps this command from the
// service, or the platform has none.
func (c *serveClient) serveOff() bool { return c.getenv(serveEnv) == "off" || !serveSupported }

// dialServe connects to this user's service. With start, a service that
// does not answer is started in the background (peerctl serve, its stderr
// appended to serve.log in the state folder) and waited for, at most
// serveStartWithin; stderr says so once, with how to stop it.
func (c *serveClient) dialServe(ctx context.Context, start bool) (*net.UnixConn, error) {
	p, err := serve.PathsFor(c.getenv)
	if err != nil {
		return nil, err
	}
	conn, err := dialUnix(p.Socket)
	if err == nil || !start {
		return conn, err
	}
	exe, err := c.program()
	if err != nil {
		return nil, fmt.Errorf("find the program that runs peerctl serve: %w", err)
	}
	logPath := filepath.Join(p.StateDir, serveLogName)
	if err := wiring.PrivateDir(p.StateDir); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	if err := wiring.PrivateFile(logPath); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(exe, "serve")
	cmd.Env, cmd.Stdout, cmd.Stderr = c.environ(), log, log
	cmd.Dir = "/"
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start peerctl serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(serveStartWithin)
	wait := 5 * time.Millisecond
	for {
		if conn, err := dialUnix(p.Socket); err == nil {
			ends := fmt.Sprintf("it ends itself after %s with nothing to do; to stop it sooner: peerctl serve stop", defaultQuiet)
			if c.getenv(natsEnv) != "" { // serve on the bus has no idle exit
				ends = "it stays a node of the fleet's bus ($" + natsEnv + ") until: peerctl serve stop"
			}
			fmt.Fprintf(c.io.errOut, "peerctl: started peerctl serve in the background for %s (log: %s); %s\n", safe(p.StateDir), safe(logPath), ends)
			return conn, nil
		}
		select {
		case err := <-exited:
			// A service that lost the race to another one exits at once;
			// the other answers.
			if conn, derr := dialUnix(p.Socket); derr == nil {
				return conn, nil
			}
			return nil, fmt.Errorf("peerctl serve ended at once (%v): see %s", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("peerctl serve did not answer on %s within %s: see %s", p.Socket, serveStartWithin, logPath)
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// running reports whether this user's service answers on its socket now
// (none is started; never with PEERCTL_SERVE=off).
func (c *serveClient) running(ctx context.Context) bool {
	if c.serveOff() {
		return false
	}
	conn, err := c.dialServe(ctx, false)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func dialUnix(path string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
}

// fleetAskWithin bounds asking the service for the fleet: one that does
// not answer by then (busy, stopping) is read around.
const fleetAskWithin = 5 * time.Second

// fleet is every node's presence on the bus of servers urls from this
// user's running service's live view of it (the "fleet" request: what
// list --fleet reads from the bus, the same document); ok is false when
// no service runs (none is started), PEERCTL_SERVE=off, or the service is
// on no bus, another one, or has no view of it now. The service writes
// the sessions as list --json's document (serve.Answer.FleetDoc): with
// asDoc, doc is that document, to print as it is, when it is one as
// peerctl prints them (wire.Printed: valid JSON, every character
// printable) and l holds the notes and partial only; otherwise the
// document is read into l.Sessions (doc nil).
func (c *serveClient) fleet(ctx context.Context, urls string, asDoc bool) (l wire.Listing, doc []byte, ok bool) {
	if c.serveOff() {
		return wire.Listing{}, nil, false
	}
	conn, err := c.dialServe(ctx, false)
	if err != nil {
		return wire.Listing{}, nil, false
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(fleetAskWithin))
	if serve.WriteLine(conn, serve.Request{V: serve.Protocol, Op: "fleet", Bus: urls, Doc: true}) != nil {
		return wire.Listing{}, nil, false
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	var a serve.Answer
	if serve.ReadLine(r, &a) != nil || a.Fleet == nil || a.FleetDoc < 0 || a.FleetDoc > serve.MaxFleetDoc {
		return wire.Listing{}, nil, false
	}
	if a.FleetDoc == 0 { // an older service's answer: the listing whole
		return *a.Fleet, nil, true
	}
	doc = make([]byte, a.FleetDoc)
	if _, err := io.ReadFull(r, doc); err != nil {
		return wire.Listing{}, nil, false
	}
	if asDoc && wire.Printed(doc) {
		return *a.Fleet, doc, true
	}
	if json.Unmarshal(doc, &a.Fleet.Sessions) != nil || a.Fleet.Sessions == nil {
		return wire.Listing{}, nil, false
	}
	return *a.Fleet, nil, true
}

// hungUpAnswerWithin bounds the wait for the service's answer once this
// command hung up (Ctrl-C): the service cancels the request and answers.
const hungUpAnswerWithin = 5 * time.Second

// errForwardUnsent says the request never reached the service whole: the
// service stores nothing of a line cut short, so the command may run here
// instead, or say nothing was stored.
var errForwardUnsent = errors.New("the request did not reach the service")

// ask writes req on conn, closes it, and returns the service's final
// answer. A request that could not be written is errForwardUnsent
// (wrapped); an answer that does not come once it was written (the
// service died, Ctrl-C here) is an outcome_unknown refusal naming what to
// look at (unanswered). A service that refused the connection (another
// uid's) answers before it hangs up: that answer is returned.
func (c *serveClient) ask(ctx context.Context, conn *net.UnixConn, req serve.Request) (serve.Answer, error) {
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() {
		// Hang up (Ctrl-C): the service cancels the request and answers
		// how it ended (a wait after the hand-over: interrupted, the
		// message handed over), within a bound.
		_ = conn.CloseWrite()
		_ = conn.SetReadDeadline(time.Now().Add(hungUpAnswerWithin))
	})
	defer stop()
	req.V = serve.Protocol
	r := bufio.NewReader(conn)
	var a serve.Answer
	if err := serve.WriteLine(conn, req); err != nil {
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if serve.ReadLine(r, &a) == nil && a.Done && (a.Error != nil || a.Refusal != nil) {
			return a, nil
		}
		return a, fmt.Errorf("%w: %v", errForwardUnsent, err)
	}
	var stored *serve.Ref
	for {
		a = serve.Answer{}
		if err := serve.ReadLine(r, &a); err != nil {
			why := "the service's answer did not come"
			if ctx.Err() != nil {
				why = "interrupted while the service had it"
			}
			return a, unanswered(req, stored, fmt.Sprintf("%s (%v)", why, err))
		}
		if a.Done {
			return a, nil
		}
		if a.Stored != nil {
			stored = a.Stored
		}
		if a.Talk != nil {
			a.Talk.Tell(app.SendTraceFrom(ctx), stored)
		}
	}
}

// unanswered is the refusal of a request the service had and did not
// answer (why): outcome_unknown, with what to look at before sending
// again: the message the service said it stored, else the outbox's
// messages to the address (and the key); a plain send may have been
// delivered.
func unanswered(req serve.Request, stored *serve.Ref, why string) error {
	o := req.Send
	switch {
	case o == nil:
		return domain.Refuse(domain.ReasonOutcomeUnknown, "%s: the change may have been made; look: peerctl outbox show %d", why, req.ID)
	case stored != nil:
		return domain.Refuse(domain.ReasonOutcomeUnknown, "%s after it stored the message as %d: it may have been delivered; look before sending again: peerctl outbox show %d",
			why, stored.ID, stored.ID)
	case o.Durable > 0:
		look := domain.ShellCommand("peerctl", "outbox", "--target", o.Query.Address)
		if o.Key != "" {
			look += fmt.Sprintf(" (the message with key %q)", o.Key)
		}
		return domain.Refuse(domain.ReasonOutcomeUnknown, "%s after it had the request: it may have been stored, and delivered; look before sending again: %s, then peerctl outbox show ID", why, look)
	}
	return domain.Refuse(domain.ReasonOutcomeUnknown, "%s after it had the request: it may have been delivered; sending again may deliver it twice", why)
}

// outboxUnavailable is the refusal of a durable request that found no
// service to keep it.
func outboxUnavailable(err error) error { return serve.OutboxUnavailable(err) }

// answered prints the service's answer as this command prints the same
// result without the service: notes on stderr, then the receipt (a kept
// durable message's, with the outbox object), the outbox message, or the
// refusal or error, with its exit code. A receipt talk printed at the
// hand-over is not printed again: what the wait added is.
func (c *serveClient) answered(a serve.Answer, asJSON, awaited bool, talk *waitTalk) error {
	talk.stop()
	told, printed := talk.printed()
	passLines(c.io.errOut, notTold(a.Notes, told))
	switch {
	case a.Refusal != nil:
		return a.Refusal.Err()
	case a.Usage:
		return usageError{errors.New(string(a.Error))}
	case a.Error != nil && a.Code != wire.ExitError:
		return &wire.FarError{Code: a.Code, Message: safe(string(a.Error))}
	case a.Error != nil:
		return errors.New(string(a.Error))
	case a.Message != nil:
		m := a.Message.OutboxMessage()
		if asJSON {
			return c.io.writeJSON(m)
		}
		printOutboxMessage(c.io.out, m, c.io.colourOn(c.io.out), false)
		return nil
	case a.Sent != nil && a.Kept:
		return printKept(c.io, *a.Sent, a.Ref, asJSON, awaited)
	case a.Sent != nil:
		sent := *a.Sent
		sent.Receipt.Outbox = a.Ref.OutboxRef()
		if printed {
			return printSentAfter(c.io, sent, awaited, told)
		}
		return printSent(c.io, sent, asJSON, awaited)
	}
	return nil
}

// printKept prints a durable send that is kept, not (yet) handed over:
// outcome "stored" with the outbox object; one whose TTL was over before
// it could be tried, "expired"; one the trust policy holds,
// "awaiting_approval", with how to approve or deny it; for a repeated key the first message as
// it stands (app.DurableOutcome). With --await-reply (awaited) and no
// --json, stdout is the reply's alone: a kept message has none yet, so its
// receipt goes to stderr and stdout stays empty (exit 0: it is kept).
func printKept(ios *iostreams, sent wire.Sent, ref *serve.Ref, asJSON, awaited bool) error {
	out := sent.Receipt
	out.Outbox = ref.OutboxRef()
	if ref == nil {
		ref = &serve.Ref{}
	}
	out.Detail = string(ref.Reason)
	if asJSON {
		return ios.writeJSON(out)
	}
	w := ios.out
	if awaited {
		w = ios.errOut
	}
	target := safe(outboxTarget(string(ref.Address), ref.Host))
	switch {
	case ref.Duplicate:
		fmt.Fprintf(w, "%s: message %d (key %q) to %q is already in the outbox, %s; nothing new was stored or sent\n", out.Outcome, ref.ID, safe(string(ref.Key)),
			target, ref.State)
	case out.Outcome == "stored":
		fmt.Fprintf(w, "stored: message %d for %q is kept until %s and delivered when the session can take it\n", ref.ID, safe(string(ref.Address)), shownStamp(ref.ExpiresAt))
	case out.Outcome == domain.OutboxAwaitingApproval.String():
		// Two lines: the hold (its rule says why), and what to do with
		// it, by its id.
		fmt.Fprintf(w, "awaiting_approval: message %d for %q is held by the trust policy (%s); nothing was sent\n", ref.ID, target, safe(ref.Rule))
		fmt.Fprintf(w, "approve it: peerctl outbox approve %d   (or end it: peerctl outbox deny %d; follow it: peerctl outbox show %d)\n", ref.ID, ref.ID, ref.ID)
		return nil
	default:
		fmt.Fprintf(w, "%s: message %d for %q was not delivered\n", out.Outcome, ref.ID, target)
	}
	if out.Detail != "" {
		fmt.Fprintf(w, "why: %s\n", safe(out.Detail))
	}
	fmt.Fprintf(w, "follow it: peerctl outbox show %d\n", ref.ID)
	return nil
}

// settings are what a send of this command takes from its setting, made
// explicit for the service (wire.Settings): each harness flag's value,
// else its variable's, a relative path made absolute here and a program
// found on this command's PATH; each harness's carried settings, resolved
// here (ports.HarnessPlugin.Carry: opencode's database); with hosts,
// $PEERCTL_HOST_TIMEOUT (a bad
// one is a usage error) and $PEERCTL_SSH. No secret is among them.
func (c *serveClient) settings(hosts bool) (wire.Settings, error) {
	set := wire.Settings{Flags: map[string]string{}}
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			v := ""
			if pv, ok := c.flags[f.Name]; ok {
				v = *pv
			}
			if v == "" {
				v = c.getenv(f.Env)
			}
			if v, ok := explicit(v, f.Program); ok {
				set.Flags[f.Name] = v
			}
		}
	}
	wiring.Plugins().Carry(set.Flags, c.getenv)
	if hosts {
		t, err := c.hostTimeout()
		if err != nil {
			return set, err
		}
		set.HostTimeout, set.SSH = t, c.getenv("PEERCTL_SSH")
	}
	return set, nil
}

// explicit is v (a harness flag's value, else its variable's) as it names
// the same file wherever it is used: a relative path made absolute here; a
// program's name (program: the one looked up when v is "") found on this
// process's PATH. ok is false when nothing is named: the harness's
// default applies.
func explicit(v, program string) (string, bool) {
	named := v != ""
	if !named {
		v = program
	}
	if v == "" {
		return "", false
	}
	if program != "" && !strings.ContainsRune(v, filepath.Separator) {
		path, err := exec.LookPath(v)
		if err != nil {
			return v, named
		}
		v = path
	}
	if abs, err := filepath.Abs(v); err == nil {
		v = abs
	}
	return v, true
}
