package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// sendOptions are send's request and what it needs: the streams, the
// node of the host, the service's client, the trust policy's decision.
type sendOptions struct {
	io        *iostreams
	node      func(domain.Dest) (app.Node, error)
	serve     func() *serveClient
	allowedTo func(ctx context.Context, address string, dest domain.Dest) error
	// dest is the host; query the send there.
	dest    domain.Dest
	query   wire.SendQuery
	durable durableFlags
	json    bool
	// events: run over ssh by a peerctl that asked for the send's events
	// (wire.SendEventsEnv): they go to stdout before the receipt.
	events bool
}

func newSendCmd(f *factory) *cobra.Command {
	opts := &sendOptions{io: f.io, node: f.node, serve: f.serveClient, allowedTo: f.allowedTo}
	var (
		transport string
		timeout   time.Duration
		dryRun    bool
		from      string
		confirm   confirmFlags
		await     time.Duration
		hosts     []string
	)
	cmd := &cobra.Command{
		Use:   "send SESSION [TEXT|-]",
		Short: "Deliver a message into one live session",
		Long:  helpLong(`Deliver TEXT (or stdin, with "-") into one live `+wiring.Plugins().Titles("or")+` session, safely`, "send"),
		Example: `  peerctl send proj-89 "the API changed, rebase"
  git log -1 --format=%B | peerctl send --transport socket 26df9a5b -
  peerctl send --dry-run proj-89 -- "--force is fine now"  # a TEXT with - first
  peerctl send --wait=5m proj-89 "run the tests"   # --wait=5m, not --wait 5m
  peerctl send --durable=8h --key nightly-42 reviewer "the build broke"  # kept
  answer=$(peerctl send --await-reply=2m proj-89 "which branch are you on?")`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("send needs SESSION and TEXT (or - for stdin), got %s", domain.Count(len(args), "argument"))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if transport != "" && !slices.Contains(wiring.Plugins().Transports(), transport) {
				return usageError{fmt.Errorf("--transport %q: want %s", transport, wiring.Plugins().TransportChoices())}
			}
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a positive duration such as 30s", timeout)}
			}
			if err := validName("--from", from, cmd.Flags().Changed("from")); err != nil {
				return err
			}
			if cmd.Flags().Changed("from") && transport == "socket" {
				// The socket's frame has no field for it (see --from's help).
				return usageError{fmt.Errorf("--from and --transport socket: the socket transport carries no sender's name; leave one out")}
			}
			// A zero written out (--wait=0s, --await-reply=0s) asks for a wait
			// the zero value would silently skip: refuse it like a negative one.
			for _, name := range []string{"wait", "await-reply"} {
				if fl := cmd.Flags().Lookup(name); fl.Changed && fl.Value.String() == (time.Duration(0)).String() {
					return usageError{fmt.Errorf("--%s %s: want a positive duration such as 2m", name, fl.Value)}
				}
			}
			if err := confirm.validate(); err != nil {
				return err
			}
			if err := validAwait(await, transport, dryRun, confirm); err != nil {
				return err
			}
			if err := opts.durable.validate(cmd, dryRun); err != nil {
				return err
			}
			if cmd.Flags().Changed(stdinBytesFlag) && f.callerGone == nil {
				// Only a peerctl calling over ssh (--hello) announces its text:
				// anywhere else the word is a TEXT that was meant after --.
				return usageError{fmt.Errorf("unknown flag: --%s (a TEXT that starts with - goes after --: peerctl send SESSION -- TEXT)", stdinBytesFlag)}
			}
			f.io.jsonOut = opts.json // a refusal of the text prints as JSON too
			opts.events = f.callerGone != nil && opts.json && f.io.jq == nil && f.io.getenv(wire.SendEventsEnv) == "1"
			var (
				address string
				err     error
			)
			if opts.dest, address, err = oneHost(hosts, args[0]); err != nil {
				return err
			}
			if isNode(opts.dest) && f.bus == nil {
				// Before the text is read: peerctl-mcp reads it from stdin
				// (unless this machine's service carries the request, and
				// then this node is the send's: one look at the service).
				n, err := f.node(opts.dest)
				if err != nil {
					return err
				}
				opts.node = func(domain.Dest) (app.Node, error) { return n, nil }
			}
			text, err := messageText(f.io, args, f.stdinBytes, f.followCaller)
			if err != nil {
				return err
			}
			f.started()
			f.io.jsonOut = opts.json
			opts.query = sendQuery(address, text, transport, from, timeout, dryRun, confirm, await)
			// A peerctl calling over ssh for a durable message asks for a
			// settled target (wire.SendSettledEnv).
			opts.query.Settled = f.callerGone != nil && f.io.getenv(wire.SendSettledEnv) == "1"
			return runSend(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&transport, "transport", "", "how to deliver: "+strings.ReplaceAll(wiring.Plugins().TransportChoices(), `"`, "")+"; default: each harness's first; queue reaches a closed session too")
	fl.DurationVar(&timeout, "timeout", defaultSendTimeout, "bound for the whole delivery")
	fl.BoolVar(&opts.json, "json", false, "print the receipt (or refusal) as JSON")
	fl.BoolVar(&dryRun, "dry-run", false, "resolve and verify; print what would run")
	f.flags.add(cmd)
	fl.StringVar(&from, "from", "", `the name the receiver sees (default "peerctl"; not with --transport socket)`)
	fl.DurationVar(&await, "await-reply", 0, "then wait this long for a reply, print it")
	fl.Lookup("await-reply").NoOptDefVal = shortDuration(defaultWait)
	// --stdin-bytes: the length of the text on stdin, which a peerctl
	// sending over ssh announces (hidden: for that use only).
	fl.IntVar(&f.stdinBytes, stdinBytesFlag, -1, "")
	_ = fl.MarkHidden(stdinBytesFlag)
	cmd.ValidArgsFunction = completeLiveSessions(f.service)
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions(wiring.Plugins().Transports(), cobra.ShellCompDirectiveNoFileComp))
	confirm.register(cmd)
	opts.durable.register(cmd)
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// runSend delivers opts.query into the one live session it names on
// opts.dest: through peerctl serve when it should go there (a durable
// send; a plain one a running service's warm courier takes), else through
// the host's node, and prints the receipt. A send the trust policy holds
// goes to the service as a durable one, kept there awaiting approval.
func runSend(ctx context.Context, opts *sendOptions) error {
	dest, q, durable, sc := opts.dest, opts.query, opts.durable, opts.serve()
	if !dest.IsLocal() || durable.on() {
		// It leaves this process before its target is resolved here;
		// a held one is kept by the service (which decides again).
		if err := opts.allowedTo(ctx, q.Address, dest); sc.holds(err, q) {
			durable.ttl, durable.held = cmp.Or(durable.ttl, app.DefaultTTL), heldBy(err)
		} else if err != nil {
			return err
		}
	}
	talk := talkWhileWaiting(opts.io, opts.json, q.Wait, q.AwaitReply)
	traced := talk.context(ctx)
	if opts.events {
		// Told as they happen, here or by the service that carries it.
		traced = app.WithSendTrace(ctx, sendEvents(opts.io))
	}
	if handled, err := sc.sendForward(traced, durable, dest, q, opts.json, talk); handled {
		return err
	}
	if !dest.IsLocal() {
		// Refused here, before any connection, as a send here would be.
		if _, err := domain.NewMessage(q.Text); err != nil {
			return err
		}
	}
	n, err := opts.node(dest)
	if err != nil {
		return err
	}
	sent, err := n.Send(courierTalk(traced, opts.io, opts.json), q)
	talk.stop()
	if sc.holds(err, q) {
		// Kept in peerctl serve's outbox for a person's approval.
		_, err := sc.sendForward(ctx, durableFlags{ttl: app.DefaultTTL, held: heldBy(err)}, dest, q, opts.json, nil)
		return err
	}
	if err != nil {
		return err
	}
	if told, ok := talk.printed(); ok {
		return printSentAfter(opts.io, sent, q.AwaitReply > 0, told)
	}
	return printSent(opts.io, sent, opts.json, q.AwaitReply > 0)
}

// messageText takes TEXT from the arguments or stdin ("-", or no TEXT with
// stdin not a terminal). It reads at most one byte over the cap, so an
// oversize message is refused (invalid_message) without reading it all,
// and the refusal says so rather than giving the size it stopped at.
func messageText(ios *iostreams, args []string, stdinBytes int, followCaller func()) (string, error) {
	if len(args) == 2 && args[1] != "-" {
		return args[1], nil
	}
	if len(args) == 1 && ios.stdinTerminal() {
		return "", usageError{fmt.Errorf("send needs TEXT, or - with the text piped on stdin")}
	}
	if stdinBytes >= 0 {
		return announcedText(ios.in, stdinBytes, followCaller)
	}
	if ios.stdinTerminal() {
		// "-" typed at a terminal: say what the wait is for.
		fmt.Fprintln(ios.errOut, "peerctl: type the message, then Ctrl-D on a line of its own to send it (Ctrl-C gives up)")
	}
	b, err := io.ReadAll(io.LimitReader(ios.in, domain.MaxMessageBytes+1))
	if err != nil {
		return "", fmt.Errorf("read message from stdin: %w", err)
	}
	if len(b) > domain.MaxMessageBytes {
		return "", domain.Refuse(domain.ReasonInvalidMessage, "message on stdin is over the %d-byte (64 KiB) cap: more than %d bytes arrived, the rest was not read; put large content in a file and send its path", domain.MaxMessageBytes, domain.MaxMessageBytes)
	}
	if strings.TrimSpace(string(b)) == "" {
		// Said of stdin, which the user may not know was read (cron).
		what := "stdin was empty"
		if len(b) > 0 {
			what = "stdin held only whitespace"
		}
		if len(args) == 1 {
			what = "no TEXT was given and " + what
		}
		return "", domain.Refuse(domain.ReasonInvalidMessage, "%s: give TEXT after SESSION, or pipe the text on stdin", what)
	}
	return string(b), nil
}

// announcedText reads the text a peerctl sending over ssh announced with
// --stdin-bytes (n): exactly that many bytes of in, since its caller holds stdin
// open for the whole call (ports.RemoteCall); a text cut short is not
// sent. What follows on stdin is the caller's end (followCaller).
func announcedText(in io.Reader, n int, followCaller func()) (string, error) {
	if n > domain.MaxMessageBytes {
		return "", domain.Refuse(domain.ReasonInvalidMessage, "message on stdin is over the %d-byte (64 KiB) cap: %d bytes were announced, none was read", domain.MaxMessageBytes, n)
	}
	b := make([]byte, n)
	got, err := io.ReadFull(in, b)
	if err != nil {
		// A cut one is not sent.
		return "", domain.Refuse(domain.ReasonDeliveryFailed, "the text on stdin is %d bytes, %d were announced (the connection broke while it came?); nothing was sent", got, n)
	}
	followCaller()
	return string(b), nil
}

// defaultSendTimeout is send's --timeout when none is given.
const defaultSendTimeout = 30 * time.Second

// stdinBytesFlag is send's hidden flag announcing the text's length.
const stdinBytesFlag = "stdin-bytes"

// sendQuery is send's flags as a node takes them.
func sendQuery(address, text, transport, from string, timeout time.Duration, dryRun bool, confirm confirmFlags, await time.Duration) wire.SendQuery {
	return wire.SendQuery{Address: address, Text: text, Transport: transport, From: from, Timeout: timeout, ConfirmTimeout: confirm.timeout,
		Wait: confirm.wait, AwaitReply: await, DryRun: dryRun, NoConfirm: confirm.noConfirm, RequireConfirm: confirm.require}
}

// printSent prints a node's send, here or on another machine: its receipt
// (with its outbox object, for a durable send) as JSON on stdout or as text (on
// stderr when the reply takes stdout: awaited), its notes on stderr
// (passLines), then the reply on stdout. Its exit code is the send's.
func printSent(ios *iostreams, sent wire.Sent, asJSON, awaited bool) error {
	out := sent.Receipt
	var err error
	switch w := ios.out; {
	case asJSON:
		err = ios.writeJSON(out)
	case awaited:
		w = ios.errOut
		fallthrough
	default:
		printReceiptText(w, out)
		passLines(ios.errOut, sent.Notes)
		if out.Reply != nil && out.Plan == nil {
			err = printReplyText(ios, *out.Reply)
		}
	}
	if asJSON {
		passLines(ios.errOut, sent.Notes)
	}
	return sentCode(sent, err)
}

// printSentAfter prints what a send that waits adds to its receipt, which
// was printed at the hand-over (waitTalk) with the notes told: how the
// wait ended, the other notes, the reply.
func printSentAfter(ios *iostreams, sent wire.Sent, awaited bool, told []string) error {
	out := sent.Receipt
	w := ios.out
	if awaited {
		w = ios.errOut
	}
	printWait(w, out.Wait)
	passLines(ios.errOut, notTold(sent.Notes, told))
	var err error
	if out.Reply != nil {
		err = printReplyText(ios, *out.Reply)
	}
	return sentCode(sent, err)
}

// sentCode is the end of a send's printing: err, else its exit code.
func sentCode(sent wire.Sent, err error) error {
	if err != nil {
		return err
	}
	if sent.Code != wire.ExitOK {
		return silentError{code: sent.Code}
	}
	return nil
}

// printReceiptText prints a receipt document as text on w: its one line
// (app.ReceiptLine, with the outbox message) and how a --wait ended; or a dry
// run's plan. One printer for a send here and one a far side's peerctl
// made.
func printReceiptText(w io.Writer, out wire.Receipt) {
	if p := out.Plan; p != nil {
		on := ""
		if out.Host != "" {
			on = " on " + safe(out.Host)
		}
		fmt.Fprintf(w, "dry run: would deliver to %q (session %s, pid %d)%s by %s; nothing was sent\n", out.Name, safe(out.SessionID), out.PID, on, safe(p.Transport))
		printPlan(w, p)
		return
	}
	if o := out.Outbox; o != nil && wire.Held(out) {
		// Kept in the outbox of the machine that held it (a local hold
		// is printKept's).
		fmt.Fprintf(w, "awaiting_approval: message %d for %q on %s is held by that machine's trust policy (%s); nothing was sent\n", o.ID, safe(o.Address), safe(out.Host), safe(o.Rule))
		fmt.Fprintf(w, "approve it there: peerctl outbox approve %d   (or end it: peerctl outbox deny %d)\n", o.ID, o.ID)
		return
	}
	fmt.Fprintln(w, app.ReceiptLine(out))
	printWait(w, out.Wait)
}

// printPlan prints a dry run's plan after its first line.
func printPlan(w io.Writer, p *domain.Plan) {
	if len(p.Argv) > 0 {
		fmt.Fprintf(w, "run:   %s\n", safe(domain.ShellCommand(p.Argv...)))
		fmt.Fprintf(w, "in:    %s\n", safe(p.Dir))
		if p.Call != "" {
			fmt.Fprintf(w, "call:  SendMessage %s\n", safe(p.Call))
		}
	}
	if p.Socket != "" {
		fmt.Fprintf(w, "socket: %s\nframe:  %s\n", safe(p.Socket), safe(strings.TrimSuffix(p.Frame, "\n")))
	}
}

// validName checks a courier display name (send --from, relay --name).
// Not given, the default "peerctl" applies. Given, it goes to `claude -n`
// as one argument, so it must be printable text that cannot read as a
// flag, at most 100 characters; given empty (from an unset shell variable,
// say) it would silently mean the default, so that is a usage error too,
// as for an empty path flag (pathflags.go).
func validName(flag, name string, given bool) error {
	switch {
	case !given:
		return nil
	case name == "":
		return usageError{fmt.Errorf("%s is empty: give a name, or leave the flag out to use \"peerctl\"", flag)}
	case strings.TrimSpace(name) == "":
		return usageError{fmt.Errorf("%s %q: want a name, not blanks", flag, name)}
	case strings.HasPrefix(name, "-"):
		return usageError{fmt.Errorf("%s %q: a name may not start with '-'", flag, name)}
	case utf8.RuneCountInString(name) > 100:
		return usageError{fmt.Errorf("%s: at most 100 characters, got %d", flag, utf8.RuneCountInString(name))}
	case !printableText(name):
		return usageError{fmt.Errorf("%s %q: %s", flag, name, wantPrintable)}
	}
	return nil
}

// wantPrintable is what printableText asks of a value, for its errors.
const wantPrintable = "want printable UTF-8 text without control characters"

// printableText reports whether s is valid UTF-8 with no control character
// (C0, DEL, C1): the rule for every name and key a sender gives (send
// --from, relay --name, an idempotency key: checkKey).
func printableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// passLines prints lines for stderr (a node's notes: whole lines, as a far
// side printed them), each escaped and cut at 4,000 bytes.
func passLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, safe(clipText(l, 4000)))
	}
}
