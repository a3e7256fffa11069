package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// receiptJSON is `send --json` output on success (docs/OUTPUT.md).
type receiptJSON struct {
	OK        bool   `json:"ok"`
	Outcome   string `json:"outcome"` // sent, posted, delivered, held; "planned" for --dry-run
	Transport string `json:"transport"`
	Harness   string `json:"harness"`
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	Endpoint  string `json:"endpoint"`
	Detail    string `json:"detail,omitempty"`
	ElapsedMs int64  `json:"elapsedMs"`
	// TransportMs is the transport's own time (the post, the courier run);
	// confirmMs (confirmJSON) the transcript confirmation's.
	TransportMs int64        `json:"transportMs"`
	Plan        *domain.Plan `json:"plan,omitempty"`
	confirmJSON
}

func (c *cli) sendCmd() *cobra.Command {
	var (
		transport string
		timeout   time.Duration
		asJSON    bool
		dryRun    bool
		claude    string
		confirm   confirmFlags
	)
	cmd := &cobra.Command{
		Use:   "send SESSION [TEXT|-]",
		Short: "Deliver a message into one live session",
		Long: `Deliver TEXT into one live Claude Code or Qwen Code session. With "-" (or no TEXT and a
piped stdin) the text is read from stdin, byte for byte.

SESSION is a full session id, a unique session-id prefix (6+ characters), an exact name
or an endpoint (cc-peer:v1:<pid>:<name>:<socket>, qwen-peer:v1:<pid>:<sessionId>:<socket>;
a qwen-peer endpoint pins the session id, which Qwen Code changes on /clear and /resume,
so an older endpoint refuses rather than reach the new conversation). peerctl re-reads the registries, resolves
the session, verifies its identity and only then runs the transport. Identity: its name
belongs to it alone, compared as Claude Code compares names (case, spaces versus hyphens and
invisible characters ignored; an unnamed session goes by its folder's name), also among
records Claude Code lists that peerctl does not call live;
no other such record publishes its socket; no other live record carries its session id; an
endpoint's name and socket still match. See docs/REGISTRY.md. (The name rule guards the
courier, which addresses by name; Qwen Code's inbox is addressed by session id.)

--transport picks among the target harness's transports; without it each harness has its
default (courier for Claude Code, inbox for Qwen Code). A transport of the other harness
refuses with harness_unsupported (exit 6).

  courier  (Claude Code, default) one "claude -p" restricted to ListAgents + SendMessage; the program is
           --claude, else $PEERCTL_CLAUDE, else "claude" on PATH. Success needs proof: exit 0,
           the answer SENT and a SendMessage call carrying the exact text.
  socket   (Claude Code) posts one JSON line to the session's inbox socket; the socket never
           answers, so success means "posted".
  inbox    (Qwen Code, default) its Cross-Session Protocol: the auth line with the record's
           ipcToken (never shown), a user frame (fresh msgId, toSessionId, fromName "peerctl",
           fromMode "prompting") whose from + replyToken name a short-lived inbox of
           peerctl's own. The outcome is Qwen Code's receipt: delivered or held (parked for
           its user's /peers accept; 0.24.4 sessions in their default auto mode hold a
           "prompting" sender unless agents.crossSessionInbound is "accept"); refused, denied,
           misaddressed, expired or dropped exit 5 (delivery_failed) with the status and
           reason; no receipt within --confirm-timeout is "posted".

The message must be non-empty, valid UTF-8 without NUL bytes, at most 64 KiB.

--dry-run makes every check the send makes before delivering (with --transport socket: a
socket is there) and prints what would run. The receipt says how long the transport took
and, apart, how long the transcript confirmation took.

--wait takes a duration only joined by "=": --wait=5m. A bare --wait waits 10m; a duration
written apart (--wait 5m) is refused as a usage error, since the flag parser would read it
as SESSION or TEXT.

` + exitCodesFor(exitOK, exitError, exitUsage, exitNotLive, exitIdentityMismatch, exitDeliveryFailed,
			exitHarnessUnsupported, exitNotAddressable, exitInvalidMessage),
		Example: `  peerctl send proj-89 "the API changed, rebase"
  git log -1 --format=%B | peerctl send --transport socket 26df9a5b -
  peerctl send --dry-run --json proj-89 "hello"
  peerctl send --wait=5m proj-89 "run the tests and tell me"
  peerctl send --json 'qwen-peer:v1:4242:0f6d…:/run/user/1000/qwen-socks/4242.sock' "rebase please"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if d := bareWaitDuration(c.args); d != "" {
				// Sending it as the session's name or as the text would surprise.
				return usageError{fmt.Errorf("--wait %s: --wait takes its duration joined by '=' (--wait=%s); written apart, %q would be read as SESSION or TEXT", d, d, d)}
			}
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("send needs SESSION and TEXT (or - for stdin), got %s", plural(len(args), "argument"))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if transport != "" && transport != app.TransportCourier && transport != app.TransportSocket && transport != app.TransportInbox {
				return usageError{fmt.Errorf("--transport %q: want %q or %q (Claude Code) or %q (Qwen Code)", transport, app.TransportCourier, app.TransportSocket, app.TransportInbox)}
			}
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a positive duration such as 30s", timeout)}
			}
			if err := confirm.validate(); err != nil {
				return err
			}
			c.jsonOut = asJSON // a refusal of the text prints as JSON too
			text, err := c.messageText(args)
			if err != nil {
				return err
			}
			c.started()
			c.jsonOut = asJSON
			window := confirm.timeout
			if confirm.noConfirm {
				window = -1
			}
			svc, err := c.service(options{transport: transport, timeout: timeout, claude: claude, inboxWindow: window})
			if err != nil {
				return err
			}
			res, err := svc.Send(cmd.Context(), app.SendRequest{Address: args[0], Text: text, DryRun: dryRun, ConfirmOptions: confirm.options()})
			if err != nil {
				return err
			}
			return c.printReceipt(res, transport, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&transport, "transport", "", `how to deliver: "courier" or "socket" (Claude Code), "inbox" (Qwen Code); default: the target harness's (courier, inbox)`)
	f.DurationVar(&timeout, "timeout", 30*time.Second, "bound for the whole delivery (e.g. 3s, 1m)")
	f.BoolVar(&asJSON, "json", false, "print the receipt (or refusal) as JSON on stdout")
	f.BoolVar(&dryRun, "dry-run", false, "resolve and verify, print what would run, send nothing")
	f.StringVar(&claude, "claude", "", "courier program (default $PEERCTL_CLAUDE, else claude on PATH; empty is a usage error)")
	cmd.ValidArgsFunction = c.completeLiveSessions
	_ = cmd.RegisterFlagCompletionFunc("transport", cobra.FixedCompletions(app.Transports(), cobra.ShellCompDirectiveNoFileComp))
	confirm.register(cmd)
	return cmd
}

// messageText takes TEXT from the arguments or stdin ("-", or no TEXT with
// stdin not a terminal). It reads at most one byte over the cap, so an
// oversize message is refused (invalid_message) without reading it all,
// and the refusal says so rather than giving the size it stopped at.
func (c *cli) messageText(args []string) (string, error) {
	if len(args) == 2 && args[1] != "-" {
		return args[1], nil
	}
	if len(args) == 1 && isTerminal(c.stdin) {
		return "", usageError{fmt.Errorf("send needs TEXT, or - with the text piped on stdin")}
	}
	b, err := io.ReadAll(io.LimitReader(c.stdin, domain.MaxMessageBytes+1))
	if err != nil {
		return "", fmt.Errorf("read message from stdin: %w", err)
	}
	if len(b) > domain.MaxMessageBytes {
		return "", domain.Refuse(domain.ReasonInvalidMessage, "message on stdin is over the %d-byte (64 KiB) cap: more than %d bytes arrived, the rest was not read; put large content in a file and send its path", domain.MaxMessageBytes, domain.MaxMessageBytes)
	}
	return string(b), nil
}

func (c *cli) printReceipt(res app.SendResult, transport string, asJSON bool) error {
	t := res.Target
	out := receiptJSON{OK: true, Outcome: res.Receipt.Outcome, Transport: res.Receipt.Transport, Harness: t.Harness().String(), SessionID: t.ID(),
		PID: t.PID(), Name: t.Name(), Endpoint: t.Endpoint().String(), Detail: res.Receipt.Detail,
		ElapsedMs: res.Elapsed.Milliseconds(), TransportMs: res.TransportElapsed.Milliseconds(), Plan: res.Plan}
	if res.Plan != nil {
		out.Outcome, out.Transport = "planned", res.Plan.Transport
	} else {
		out.fillConfirm(res)
	}
	if asJSON {
		if res.Plan == nil {
			c.warnUnconfirmed(res)
		}
		return c.writeJSON(out)
	}
	if p := res.Plan; p != nil {
		fmt.Fprintf(c.stdout, "dry run: would deliver to %q (session %s, pid %d) by %s; nothing was sent\n", t.Name(), safe(t.ID()), t.PID(), p.Transport)
		if len(p.Argv) > 0 {
			fmt.Fprintf(c.stdout, "run:   %s\n", shellQuote(p.Argv))
			fmt.Fprintf(c.stdout, "in:    %s\n", safe(p.Dir))
			fmt.Fprintf(c.stdout, "stdin (its nonce is drawn afresh for a real run):\n%s", p.Stdin)
		}
		if p.Socket != "" {
			fmt.Fprintf(c.stdout, "socket: %s\nframe:  %s\n", safe(p.Socket), safe(strings.TrimSuffix(p.Frame, "\n")))
		}
		return nil
	}
	if res.Receipt.Transport != "" {
		transport = res.Receipt.Transport
	}
	fmt.Fprintf(c.stdout, "%s: %q (session %s, pid %d) by %s in %s%s\n", out.Outcome, t.Name(), safe(t.ID()), t.PID(), transport,
		res.TransportElapsed.Round(time.Millisecond), confirmTime(res))
	c.printConfirm(res)
	return nil
}

// confirmTime is the receipt line's tail on the transcript confirmation:
// how long it took, apart from the transport's own time ("" when no
// transcript was read).
func confirmTime(res app.SendResult) string {
	switch {
	case res.ConfirmElapsed <= 0:
		return ""
	case res.Confirmed:
		return fmt.Sprintf("; confirmed by the transcript in %s", res.ConfirmElapsed.Round(time.Millisecond))
	default:
		return fmt.Sprintf("; not confirmed after %s", res.ConfirmElapsed.Round(time.Millisecond))
	}
}

func shellQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}
