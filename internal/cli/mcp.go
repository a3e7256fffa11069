package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// The MCP tools' names, as an MCP client lists them (Claude Code shows
// them as mcp__<server name>__<tool>).
const (
	toolList = "list_sessions"
	toolShow = "show_session"
	toolSend = "send_message"
)

// callMargin is what the default --call-timeout adds to --timeout and
// --confirm-timeout: the registry reads and the courier's start and end.
const callMargin = 25 * time.Second

// listArgs are list_sessions' arguments.
type listArgs struct {
	All     bool   `json:"all,omitempty" jsonschema:"true: every registry record with its verdict (live, stale, reused, foreign, ...), not only the live sessions"`
	Harness string `json:"harness,omitempty" jsonschema:"list one harness only: claude-code or qwen-code (default: all)"`
}

// listOut is list_sessions' result: the array `list --json` prints, under
// "sessions" (an MCP tool's structured content is a JSON object).
type listOut struct {
	Sessions []sessionJSON `json:"sessions"`
	// Note says the registry folder does not exist (the CLI's stderr note).
	Note string `json:"note,omitempty"`
}

// showArgs are show_session's arguments.
type showArgs struct {
	Session string `json:"session" jsonschema:"the session: a full session id, a unique id prefix (6+ characters), an exact name, an endpoint (cc-peer:v1:...), or, for a record that is not live, its pid or file name"`
}

// sendArgs are send_message's arguments.
type sendArgs struct {
	To        string `json:"to" jsonschema:"the session: a full session id, a unique id prefix (6+ characters), an exact name, or an endpoint (cc-peer:v1:...)"`
	Text      string `json:"text" jsonschema:"the message, delivered byte for byte: non-empty UTF-8 without NUL bytes, at most 64 KiB"`
	Transport string `json:"transport,omitempty" jsonschema:"how to deliver; default: the target harness's own (courier for Claude Code, inbox for Qwen Code). Claude Code: courier (a headless claude -p whose SendMessage carries the text) or socket (a post to the session's inbox socket); Qwen Code: inbox"`
	// AwaitReplySeconds > 0 waits for the target's reply (send --await-reply).
	AwaitReplySeconds int `json:"await_reply_seconds,omitempty" jsonschema:"when above 0: after the send, wait up to this many seconds for the target session's reply (a message from it to peerctl) and return it in the receipt as reply {text, fromName, from, at}; no reply in time is an error whose text starts with no_reply (the message itself was handed over). Not with transport socket. The call's deadline grows by the same time"`
}

// maxAwaitReplySeconds bounds send_message's await_reply_seconds (1 h).
const maxAwaitReplySeconds = 3600

// extraTime is how much longer than --call-timeout the call may run: the
// reply's wait.
func (a sendArgs) extraTime() time.Duration { return time.Duration(a.AwaitReplySeconds) * time.Second }

// longerCall is a tool's arguments that lengthen the call's deadline.
type longerCall interface{ extraTime() time.Duration }

// mcpTools serves peerctl's use cases as MCP tools. service returns the
// Service that delivers by the named transport ("" for each harness's
// default, "courier", "socket", "inbox"; list and show use the default's,
// which reads the same registries).
type mcpTools struct {
	service     func(transport string) (*app.Service, error)
	callTimeout time.Duration
	// confirm is what a send does after the transport succeeded.
	confirm app.ConfirmOptions
	// life, when set, ends every running call when it ends (a signal):
	// the SDK cancels running calls when stdin closes, but on its server's
	// context ending it waits for them.
	life context.Context
}

// mcpInstructions is what the server tells a client's model about itself.
func mcpInstructions() string {
	words := make([]string, 0, len(domain.Reasons()))
	for _, r := range domain.Reasons() {
		words = append(words, r.String())
	}
	return "peerctl finds the live Claude Code and Qwen Code sessions on this machine and delivers a message into one of them, safely.\n" +
		"list_sessions lists them (name, sessionId, endpoint, status, cwd); show_session shows one; send_message delivers text to one.\n" +
		"A refusal is an error result whose text starts with a stable reason word (" + strings.Join(words, ", ") + ").\n" +
		"Address a session by full id or endpoint when its name is shared."
}

// server builds the MCP server with the three tools. version is peerctl's.
func (m *mcpTools) server(version string, logger *slog.Logger) (*mcp.Server, error) {
	sendSchema, err := jsonschema.For[sendArgs](nil)
	if err != nil {
		return nil, fmt.Errorf("send_message input schema: %w", err)
	}
	for _, t := range app.Transports() {
		sendSchema.Properties["transport"].Enum = append(sendSchema.Properties["transport"].Enum, t)
	}
	awaitMin, awaitMax := 0.0, float64(maxAwaitReplySeconds)
	sendSchema.Properties["await_reply_seconds"].Minimum = &awaitMin
	sendSchema.Properties["await_reply_seconds"].Maximum = &awaitMax
	listSchema, err := jsonschema.For[listArgs](nil)
	if err != nil {
		return nil, fmt.Errorf("list_sessions input schema: %w", err)
	}
	for _, h := range domain.Harnesses() {
		listSchema.Properties["harness"].Enum = append(listSchema.Properties["harness"].Enum, h.String())
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "peerctl", Version: version},
		&mcp.ServerOptions{Instructions: mcpInstructions(), Logger: logger, Capabilities: &mcp.ServerCapabilities{}})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	mcp.AddTool(s, &mcp.Tool{Name: toolList, Title: "List live coding-agent sessions",
		Description: "List the live Claude Code and Qwen Code sessions on this machine: the objects of `peerctl list --json` under \"sessions\" " +
			"(harness, sessionId, pid, name, cwd, status, endpoint, addressable, verdict, ...). With all, every registry record and its verdict; " +
			"with harness, one harness's only.",
		InputSchema: listSchema,
		Annotations: readOnly}, guard(m, m.list))
	mcp.AddTool(s, &mcp.Tool{Name: toolShow, Title: "Show one session",
		Description: "Show everything known about one session, as `peerctl show --json` prints it: the record's fields, verdict, " +
			"endpoint, whether its socket exists, its transcript path, and warnings (e.g. a shared name).",
		Annotations: readOnly}, guard(m, m.show))
	mcp.AddTool(s, &mcp.Tool{Name: toolSend, Title: "Send a message to a session",
		Description: "Deliver text into one live Claude Code or Qwen Code session, as `peerctl send --json` does: the registries are " +
			"re-read, the session resolved and its identity verified before anything is sent. The result is the receipt (outcome " +
			"delivered, queued, held or posted; confirmed when the target shows the text). With await_reply_seconds, it then waits " +
			"for the target's answer and returns it as reply.text; none in time is an error starting with no_reply. A refusal is an " +
			"error whose text starts with its reason word.",
		InputSchema: sendSchema,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(false), DestructiveHint: new(false)}}, guard(m, m.send))
	return s, nil
}

// guard gives every call its deadline and turns what the use case returns
// into the tool's result: a refusal or error becomes an isError result
// (for a refusal, refusalText: it starts with the reason word), and a
// panic becomes one too, so the server keeps serving.
func guard[In, Out any](m *mcpTools, h func(context.Context, In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		if req != nil && req.Params != nil {
			if why := inexactJSON(req.Params.Arguments); why != "" {
				var zero Out
				return nil, zero, fmt.Errorf("%s: the arguments hold %s; JSON decoding would put U+FFFD in its place, so nothing was done", domain.ReasonInvalidMessage, why)
			}
		}
		limit := m.callTimeout
		if lc, ok := any(in).(longerCall); ok {
			limit += lc.extraTime()
		}
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if m.life != nil {
			defer context.AfterFunc(m.life, cancel)()
		}
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("internal error (a bug in peerctl, please report it): %v", p)
			}
		}()
		out, err = h(ctx, in)
		if err != nil {
			if r, ok := domain.AsRefusal(err); ok {
				err = errors.New(refusalText(r))
			}
			var zero Out
			return nil, zero, err
		}
		return nil, out, nil
	}
}

func (m *mcpTools) list(ctx context.Context, in listArgs) (listOut, error) {
	var only []domain.Harness
	if in.Harness != "" {
		h, err := domain.ParseHarness(in.Harness) // the schema's enum admits only these
		if err != nil {
			return listOut{}, err
		}
		only = append(only, h)
	}
	svc, err := m.service("")
	if err != nil {
		return listOut{}, err
	}
	l, err := svc.List(ctx, in.All)
	if err != nil {
		return listOut{}, err
	}
	l.Entries = app.FilterHarness(l.Entries, only...)
	out := listOut{Sessions: make([]sessionJSON, 0, len(l.Entries))}
	for _, e := range l.Entries {
		out.Sessions = append(out.Sessions, toJSON(e))
	}
	// As list says it: only when nothing is listed and Claude Code's registry was asked for.
	if l.Missing && len(l.Entries) == 0 && (in.Harness == "" || in.Harness == domain.HarnessClaudeCode.String()) {
		out.Note = app.MissingFolderNote(l.Dir)
	}
	return out, nil
}

func (m *mcpTools) show(ctx context.Context, in showArgs) (showJSON, error) {
	svc, err := m.service("")
	if err != nil {
		return showJSON{}, err
	}
	d, err := svc.Show(ctx, in.Session)
	if err != nil {
		return showJSON{}, err
	}
	return detailJSON(d), nil
}

func (m *mcpTools) send(ctx context.Context, in sendArgs) (receiptJSON, error) {
	svc, err := m.service(in.Transport)
	if err != nil {
		return receiptJSON{}, err
	}
	switch {
	case in.AwaitReplySeconds < 0 || in.AwaitReplySeconds > maxAwaitReplySeconds:
		return receiptJSON{}, fmt.Errorf("await_reply_seconds %d: want 0 to %d", in.AwaitReplySeconds, maxAwaitReplySeconds)
	case in.AwaitReplySeconds > 0 && in.Transport == app.TransportSocket:
		return receiptJSON{}, fmt.Errorf("await_reply_seconds needs the courier (Claude Code) or the inbox (Qwen Code): a socket send carries no address of peerctl's to answer to")
	}
	res, err := svc.Send(ctx, app.SendRequest{Address: in.To, Text: in.Text, ConfirmOptions: m.confirm, AwaitReply: in.extraTime()})
	if r, ok := domain.AsRefusal(err); ok && r.Reason == domain.ReasonNoReply {
		// The message was handed over: say so with its receipt after the reason.
		out := receiptFor(res)
		out.OK = false
		out.Refusal = &refusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: exitCode(r.Reason)}
		for _, in := range res.OtherInbound {
			out.OtherInbound = append(out.OtherInbound, toInboundJSON(in))
		}
		b, _ := json.Marshal(out)
		return receiptJSON{}, errors.New(refusalText(r) + "\nreceipt: " + string(b))
	}
	if err != nil {
		return receiptJSON{}, err
	}
	out := receiptFor(res)
	if res.Reply != nil {
		reply := toInboundJSON(*res.Reply)
		out.Reply = &reply
	}
	for _, in := range res.OtherInbound {
		out.OtherInbound = append(out.OtherInbound, toInboundJSON(in))
	}
	return out, nil
}

// mcpFlags are `peerctl mcp`'s own flags.
type mcpFlags struct {
	timeout, callTimeout, confirmTimeout time.Duration
	claude                               string
}

func (f mcpFlags) validate() error {
	switch {
	case f.timeout <= 0:
		return usageError{fmt.Errorf("--timeout %s: want a positive duration such as 30s", f.timeout)}
	case f.callTimeout <= 0:
		return usageError{fmt.Errorf("--call-timeout %s: want a positive duration such as 1m", f.callTimeout)}
	case f.confirmTimeout <= 0:
		return usageError{fmt.Errorf("--confirm-timeout %s: want a positive duration such as 5s", f.confirmTimeout)}
	}
	return nil
}

// mcpTools builds the tools over one Service per transport choice ("",
// each harness's default, and each named transport), each built once, as
// send builds its own.
func (c *cli) mcpTools(f mcpFlags) (*mcpTools, error) {
	services := map[string]*app.Service{}
	for i, t := range append([]string{""}, app.Transports()...) {
		svc, err := c.service(options{transport: t, timeout: f.timeout, claude: f.claude, inboxWindow: f.confirmTimeout, quiet: i > 0})
		if err != nil {
			return nil, err
		}
		services[t] = svc
	}
	return &mcpTools{callTimeout: f.callTimeout, confirm: app.ConfirmOptions{ConfirmTimeout: f.confirmTimeout},
		service: func(transport string) (*app.Service, error) {
			if svc, ok := services[transport]; ok {
				return svc, nil
			}
			return nil, fmt.Errorf("transport %q: want one of %q", transport, app.Transports())
		}}, nil
}

func (c *cli) mcpCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdin/stdout: list, show and send as tools",
		Long: `Serve the Model Context Protocol (MCP) over stdio, so any agent that speaks MCP (Claude Code,
Codex, Gemini CLI, Cursor, ...) can list the live Claude Code and Qwen Code sessions and
message them. The client starts "peerctl mcp" and talks JSON-RPC on its stdin and stdout;
peerctl's own messages go to stderr. Tools:

  list_sessions  {all?, harness?}        the objects of "list --json", under "sessions";
                                         harness is "claude-code" or "qwen-code"
  show_session   {session}               the object of "show --json"
  send_message   {to, text, transport?, await_reply_seconds?}
                                         the receipt of "send --json"; transport is
                                         "courier" or "socket" (Claude Code), "inbox"
                                         (Qwen Code), default the target harness's own;
                                         await_reply_seconds > 0 (at most 3600) waits for
                                         the target's reply as send --await-reply does:
                                         the receipt gains "reply", and no reply in time
                                         is an error result starting with "no_reply"

Every result is JSON text and the same value as structured content (docs/OUTPUT.md). A
refusal is an error result (isError) whose text starts with the reason word, e.g.
"not_live: ...", "identity_mismatch: ..."; bad arguments are error results too, and the
server keeps serving. A send confirms as send does (the target's transcript, or Qwen Code's
receipt, up to --confirm-timeout). Every call ends within --call-timeout (by default
--timeout plus --confirm-timeout plus 25s); a send_message with await_reply_seconds gets
that many seconds more. --config-dir and --qwen-home apply to every
call; --debug also logs the MCP session to stderr. When stdin closes, or on SIGTERM or SIGINT, the server ends (exit 0);
calls still running are cancelled, a courier's whole process group with them.

Add it to Claude Code with:
  claude mcp add peerctl -- peerctl mcp

` + exitCodesFor(exitOK, exitError, exitUsage),
		Example: `  claude mcp add peerctl -- peerctl mcp
  claude mcp add peerctl -- peerctl --config-dir ~/.claude-work mcp --timeout 1m
  codex mcp add peerctl -- peerctl mcp`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("call-timeout") {
				f.callTimeout = f.timeout + f.confirmTimeout + callMargin
			}
			if err := f.validate(); err != nil {
				return err
			}
			c.started()
			tools, err := c.mcpTools(f)
			if err != nil {
				return err
			}
			return c.serveMCP(cmd.Context(), tools)
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound for one delivery, as send --timeout")
	fs.DurationVar(&f.confirmTimeout, "confirm-timeout", app.DefaultConfirmTimeout, "how long a send looks for the text in the target's transcript, as send --confirm-timeout")
	fs.DurationVar(&f.callTimeout, "call-timeout", 0, "bound for one whole tool call (default --timeout + --confirm-timeout + "+callMargin.String()+", 1m0s with the defaults)")
	fs.StringVar(&f.claude, "claude", "", "courier program (default $PEERCTL_CLAUDE, else claude on PATH)")
	return cmd
}

// serveMCP serves tools on the cli's stdin and stdout until stdin closes
// or ctx ends (a signal): both end the server cleanly, and cancel the calls
// still running (a courier's process group is ended with its call).
func (c *cli) serveMCP(ctx context.Context, tools *mcpTools) error {
	tools.life = ctx
	logger := slog.New(slog.DiscardHandler)
	if c.debug {
		logger = slog.New(slog.NewTextHandler(c.stderr, nil))
	}
	s, err := tools.server(c.version().Version, logger)
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(&jsonLines{r: bufio.NewReader(c.stdin), note: c.stderr}), Writer: nopWriteCloser{c.stdout}}
	err = s.Run(ctx, t)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("serve mcp: %w", err)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// jsonLines passes on the lines of r that are JSON and skips the others
// with a note: MCP's stdio transport is one JSON-RPC message per line
// (specification 2025-06-18, "stdio"), and the SDK reads stdin as one JSON
// stream, so a single line of something else would end the session and
// drop the answers to the calls still running.
type jsonLines struct {
	r    *bufio.Reader
	note io.Writer
	n    int    // lines read
	buf  []byte // the rest of a line being passed on
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.buf) == 0 {
		line, err := j.r.ReadBytes('\n')
		if len(line) > 0 {
			j.n++
			if trimmed := bytes.TrimSpace(line); len(trimmed) == 0 || json.Valid(trimmed) {
				j.buf = line
			} else {
				fmt.Fprintf(j.note, "peerctl: mcp: line %d (%d bytes) is not a JSON-RPC message; skipped\n", j.n, len(line))
			}
		}
		if err != nil && len(j.buf) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, j.buf)
	j.buf = j.buf[n:]
	return n, nil
}
