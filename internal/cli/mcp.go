package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// maxConcurrentSends is how many send_message calls run at once; the
// others wait their turn (the SDK runs every call at once: 20 couriers
// started together on a busy two-core machine all ran out of time).
const maxConcurrentSends = 2

// callQueue lets a bounded number of calls run at once; the others wait.
type callQueue struct {
	slots chan struct{}
	wait  atomic.Int64
}

// take waits for a slot until ctx or life (nil: none) ends; release gives
// the slot back.
func (q *callQueue) take(ctx, life context.Context) (release func(), err error) {
	var lifeDone <-chan struct{}
	if life != nil {
		lifeDone = life.Done()
	}
	q.wait.Add(1)
	defer q.wait.Add(-1)
	select {
	case q.slots <- struct{}{}:
		return func() { <-q.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-lifeDone:
		return nil, life.Err()
	}
}

// waiting is how many calls wait for a slot.
func (q *callQueue) waiting() int { return int(q.wait.Load()) }

// callMargin is what the default --call-timeout adds to --timeout and
// --confirm-timeout: the registry reads and the courier's start and end.
const callMargin = 25 * time.Second

// listOut is list_sessions' result: the array `list --json` prints, under
// "sessions" (an MCP tool's structured content is a JSON object).
type listOut struct {
	Sessions []wire.Session `json:"sessions"`
	// Note says the registry folder does not exist (the CLI's stderr note).
	Note string `json:"note,omitempty"`
}

// longerCall is a tool's arguments that lengthen the call's deadline.
type longerCall interface{ ExtraTime() time.Duration }

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
	// at the end of stdin the server waits for running calls, and on its
	// server's context ending the SDK waits for them too.
	life context.Context

	sendsOnce sync.Once
	sends     *callQueue

	// hostNode reaches other machines (the tools' host argument),
	// allowedTo is the trust policy's decision of a send that leaves this
	// process, serve the client of peerctl serve (durable sends); timeout
	// is a send's --timeout. Without hostNode, a host is refused.
	hostNode  func(domain.Dest) (app.Node, error)
	allowedTo func(ctx context.Context, address string, dest domain.Dest) error
	serve     func() *serveClient
	timeout   time.Duration
}

// toolHost is a tool's host argument (and an ssh:v1: endpoint's) as a
// Dest, the address on it; a bad one is an error result.
func (m *mcpTools) toolHost(host, address string) (domain.Dest, string, error) {
	var hosts []string
	if host != "" {
		hosts = []string{host}
	}
	dest, address, err := oneHost(hosts, address)
	if err == nil && !dest.IsLocal() && m.hostNode == nil {
		err = errors.New("host: other machines are not reachable from here")
	}
	return dest, address, err
}

// sendQueue is where send_message calls wait their turn.
func (m *mcpTools) sendQueue() *callQueue {
	m.sendsOnce.Do(func() { m.sends = &callQueue{slots: make(chan struct{}, maxConcurrentSends)} })
	return m.sends
}

// tools are m's use cases as the MCP server's tools.
func (m *mcpTools) tools() mcptools.Tools[listOut, wire.Show, wire.Receipt] {
	return mcptools.Tools[listOut, wire.Show, wire.Receipt]{List: guard(m, m.list, nil), Show: guard(m, m.show, nil), Send: guard(m, m.send, m.sendQueue())}
}

// guard gives every call its deadline and turns what the use case returns
// into the tool's result: arguments that JSON decoding changed are refused,
// a refusal's error text is refusalText (it starts with the reason word),
// and a panic becomes an error too, so the server keeps serving. With a
// queue q, the call first waits its turn there (ended by ctx: the client's
// cancellation); its deadline starts when it runs.
func guard[In, Out any](m *mcpTools, h func(context.Context, In) (Out, error), q *callQueue) mcptools.Tool[In, Out] {
	return func(ctx context.Context, raw json.RawMessage, in In) (out Out, err error) {
		if why := inexactJSON(raw); why != "" {
			return out, fmt.Errorf("%s: the arguments hold %s; JSON decoding would put U+FFFD in its place, so nothing was done", domain.ReasonInvalidMessage, why)
		}
		if q != nil {
			release, err := q.take(ctx, m.life)
			if err != nil {
				return out, err
			}
			defer release()
		}
		limit := m.callTimeout
		if lc, ok := any(in).(longerCall); ok {
			limit += lc.ExtraTime()
		}
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if m.life != nil {
			defer context.AfterFunc(m.life, cancel)()
		}
		defer func() {
			if p := recover(); p != nil {
				var zero Out
				out, err = zero, fmt.Errorf("internal error (a bug in peerctl, please report it): %v", p)
			}
		}()
		out, err = h(ctx, in)
		if err != nil {
			if r, ok := domain.AsRefusal(err); ok {
				err = errors.New(refusalText(r, false))
			}
			var zero Out
			return zero, err
		}
		return out, nil
	}
}

func (m *mcpTools) list(ctx context.Context, in mcptools.ListArgs) (listOut, error) {
	var only []domain.Harness
	if in.Harness != "" {
		h, err := domain.ParseHarness(in.Harness) // the schema's enum admits only these
		if err != nil {
			return listOut{}, err
		}
		only = append(only, h)
	}
	q := wire.ListQuery{All: in.All, Only: only}
	if len(in.Hosts) > 0 {
		return m.listHosts(ctx, in, q)
	}
	dest, _, err := m.toolHost(in.Host, "")
	if err != nil {
		return listOut{}, err
	}
	node, err := m.node(dest)
	if err != nil {
		return listOut{}, err
	}
	// The same use case as list, here or there: its notes (a missing
	// registry folder, a harness not asked about that could not be read,
	// the far side's warnings) in Note; a harness asked about that could
	// not be read (list's exit 1) is an error result naming it.
	l, err := node.List(ctx, q)
	if err != nil {
		return listOut{}, err
	}
	notes := make([]string, 0, len(l.Notes))
	for _, n := range l.Notes {
		notes = append(notes, wire.Safe(n))
	}
	if l.Partial {
		return listOut{}, errors.New(strings.Join(notes, "; "))
	}
	return listOut{Sessions: l.Sessions, Note: strings.Join(notes, "; ")}, nil
}

// listHosts is list_sessions over several machines (in.Hosts, and
// in.Host beside them): the same fan-out as list --host repeated
// (app.ListNodes), every session with its host. What list prints as
// warnings is the result's note, so that the machines that answered are
// not lost to one that did not: each node's notes, "host DEST: not
// listed, its sessions are left out: ERR" for one that failed.
func (m *mcpTools) listHosts(ctx context.Context, in mcptools.ListArgs, q wire.ListQuery) (listOut, error) {
	values := in.Hosts
	if in.Host != "" {
		values = append([]string{in.Host}, values...)
	}
	dests, err := parseHosts(values, true)
	if err != nil {
		return listOut{}, err
	}
	nodes := make([]app.Node, 0, len(dests))
	for _, d := range dests {
		if !d.IsLocal() && m.hostNode == nil {
			return listOut{}, errors.New("hosts: other machines are not reachable from here")
		}
		n, err := m.node(d)
		if err != nil {
			return listOut{}, err
		}
		nodes = append(nodes, n)
	}
	got := app.Merge(app.ListNodes(ctx, nodes, q))
	out := listOut{Sessions: got.Sessions}
	notes := make([]string, 0, len(got.Notes))
	for _, n := range got.Notes {
		notes = append(notes, app.Where(n.Host)+": "+wire.Safe(n.Text))
	}
	out.Note = strings.Join(notes, "; ")
	return out, nil
}

func (m *mcpTools) show(ctx context.Context, in mcptools.ShowArgs) (wire.Show, error) {
	dest, address, err := m.toolHost(in.Host, in.Session)
	if err != nil {
		return wire.Show{}, err
	}
	node, err := m.node(dest)
	if err != nil {
		return wire.Show{}, err
	}
	return node.Show(ctx, address)
}

// node is the node a tool runs on: this machine's use cases (the server's
// own Service), or dest's peerctl.
func (m *mcpTools) node(dest domain.Dest) (app.Node, error) {
	if dest.IsLocal() {
		return app.LocalNode{Open: func([]domain.Harness) (*app.Service, error) { return m.service("") },
			Sending: func(q wire.SendQuery) (*app.Service, error) { return m.service(q.Transport) }}, nil
	}
	return m.hostNode(dest)
}

func (m *mcpTools) send(ctx context.Context, in mcptools.SendArgs) (wire.Receipt, error) {
	dest, address, err := m.toolHost(in.Host, in.To)
	if err != nil {
		return wire.Receipt{}, err
	}
	if _, err := m.service(in.Transport); err != nil {
		return wire.Receipt{}, err
	}
	switch {
	case in.AwaitReplySeconds < 0 || in.AwaitReplySeconds > mcptools.MaxAwaitReplySeconds:
		return wire.Receipt{}, fmt.Errorf("await_reply_seconds %d: want 0 to %d", in.AwaitReplySeconds, mcptools.MaxAwaitReplySeconds)
	case in.AwaitReplySeconds > 0 && !wiring.Plugins().HearsReplies(in.Transport):
		return wire.Receipt{}, fmt.Errorf("await_reply_seconds needs a transport a reply comes back on (each harness's default does): a %s send carries no address of peerctl's to answer to", in.Transport)
	}
	if in.DurableSeconds != 0 || in.Key != "" {
		return m.sendDurable(ctx, dest, address, in)
	}
	if _, err := domain.NewMessage(in.Text); err != nil {
		return wire.Receipt{}, err
	}
	// A send the trust policy holds is kept in peerctl serve's outbox.
	held := func(err error) bool { return errors.Is(err, domain.ErrHeld) && m.serve().holds(err, wire.SendQuery{}) }
	if !dest.IsLocal() {
		// Decided here, before anything leaves (a send here decides on
		// its fresh read).
		if err := m.allowedTo(ctx, address, dest); held(err) {
			return m.sendDurable(ctx, dest, address, in)
		} else if err != nil {
			return wire.Receipt{}, err
		}
	}
	n, err := m.node(dest)
	if err != nil {
		return wire.Receipt{}, err
	}
	sent, err := n.Send(ctx, wire.SendQuery{Address: address, Text: in.Text, Transport: in.Transport, Timeout: m.timeout,
		ConfirmTimeout: m.confirm.ConfirmTimeout, NoConfirm: m.confirm.NoConfirm, RequireConfirm: m.confirm.RequireConfirm,
		Wait: m.confirm.Wait, AwaitReply: in.ExtraTime()})
	if held(err) {
		// Kept in peerctl serve's outbox for a person's approval.
		in.AwaitReplySeconds = 0
		return m.sendDurable(ctx, dest, address, in)
	}
	if err != nil {
		return wire.Receipt{}, err
	}
	out := sent.Receipt
	if r := out.Refusal; !out.OK && r != nil {
		// Handed over, no reply: say so with its receipt after the reason.
		b, _ := json.Marshal(out)
		return wire.Receipt{}, fmt.Errorf("%s: %s\nreceipt: %s", r.Reason, safe(r.Detail), b)
	}
	return out, nil
}

// sendDurable is send_message with durable_seconds or key: the send runs
// in peerctl serve (started on demand) as `peerctl send --json --durable`
// with this server's harness flags, timeout and confirmation window (and
// --host for a session on another machine).
func (m *mcpTools) sendDurable(ctx context.Context, dest domain.Dest, address string, in mcptools.SendArgs) (wire.Receipt, error) {
	switch {
	case in.DurableSeconds < 0 || in.DurableSeconds > mcptools.MaxDurableSeconds:
		return wire.Receipt{}, fmt.Errorf("durable_seconds %d: want 0 to %d", in.DurableSeconds, mcptools.MaxDurableSeconds)
	case in.Key != "" && checkKey(in.Key) != nil:
		return wire.Receipt{}, fmt.Errorf("key%w", checkKey(in.Key))
	case in.AwaitReplySeconds > 0:
		return wire.Receipt{}, errors.New("durable_seconds or key with await_reply_seconds: a durable message may be delivered hours later")
	}
	return m.serve().serveSend(ctx, durableSend{to: address, host: dest, text: in.Text, seconds: in.DurableSeconds, key: in.Key, transport: in.Transport,
		timeout: m.timeout, confirm: m.confirm.ConfirmTimeout})
}

// mcpFlags are `peerctl mcp`'s own flags.
type mcpFlags struct {
	timeout, callTimeout, confirmTimeout time.Duration
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
func (c *factory) mcpTools(f mcpFlags) (*mcpTools, error) {
	c.entrance = domain.EntranceMCP // the trust policy's sender of every tool call
	services := map[string]*app.Service{}
	for i, t := range append([]string{""}, wiring.Plugins().Transports()...) {
		svc, err := c.service(options{transport: t, timeout: f.timeout, receiptWindow: f.confirmTimeout, quiet: i > 0})
		if err != nil {
			return nil, err
		}
		services[t] = svc
	}
	return &mcpTools{hostNode: c.node, allowedTo: c.allowedTo, serve: c.serveClient, timeout: f.timeout, callTimeout: f.callTimeout, confirm: app.ConfirmOptions{ConfirmTimeout: f.confirmTimeout},
		service: func(transport string) (*app.Service, error) {
			if svc, ok := services[transport]; ok {
				return svc, nil
			}
			return nil, fmt.Errorf("transport %q: want one of %q", transport, wiring.Plugins().Transports())
		}}, nil
}

// mcpOptions are what `peerctl mcp` needs: the streams, the MCP server
// (nil: run peerctl-mcp for it), the tools and its flags.
type mcpOptions struct {
	io       *iostreams
	serveMCP MCPServer
	// tools builds the tools (factory.mcpTools); program runs
	// peerctl-mcp in this process's place (runMCPProgram).
	tools   func(mcpFlags) (*mcpTools, error)
	program func() error
	version string
	debug   bool
	flags   mcpFlags
}

func newMCPCmd(f *factory) *cobra.Command {
	opts := &mcpOptions{io: f.io, tools: f.mcpTools, program: func() error { return runMCPProgram(f.io, f.executable, f.args, f.environ(), "peerctl mcp") }}
	fl := &opts.flags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP on stdin/stdout: list, show and send as tools",
		Long:  helpLong(`Serve MCP over stdin/stdout: list_sessions, show_session and send_message as tools`, "mcp"),
		Example: `  claude mcp add peerctl -- peerctl mcp
  claude mcp add peerctl -- peerctl --config-dir ~/.claude-work mcp --timeout 1m
  codex mcp add peerctl -- peerctl mcp`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("call-timeout") {
				fl.callTimeout = fl.timeout + fl.confirmTimeout + callMargin
			}
			if err := fl.validate(); err != nil {
				return err
			}
			f.started()
			opts.serveMCP, opts.version, opts.debug = f.serveMCP, f.version().Version, f.debug.any()
			return runMCP(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&fl.timeout, "timeout", 30*time.Second, "bound for one delivery, as send --timeout")
	fs.DurationVar(&fl.confirmTimeout, "confirm-timeout", app.DefaultConfirmTimeout, "how long a send looks for the text in the target's transcript, as send --confirm-timeout")
	fs.DurationVar(&fl.callTimeout, "call-timeout", 0, "bound for one whole tool call (default --timeout + --confirm-timeout + "+callMargin.String()+", 1m0s with the defaults)")
	f.flags.add(cmd)
	return cmd
}

// runMCP serves the tools on stdin and stdout with opts.serveMCP until
// stdin closes or ctx ends (a signal): both end the server cleanly; at the
// end of stdin every call read is answered first, a signal cancels the
// calls still running (a courier's process group is ended with its call).
// Without a server linked in, peerctl-mcp serves instead.
func runMCP(ctx context.Context, opts *mcpOptions) error {
	if opts.serveMCP == nil {
		return opts.program()
	}
	tools, err := opts.tools(opts.flags)
	if err != nil {
		return err
	}
	return serveTools(ctx, opts, tools)
}

// serveTools serves tools with opts.serveMCP, their calls ended with ctx.
func serveTools(ctx context.Context, opts *mcpOptions, tools *mcpTools) error {
	tools.life = ctx
	return opts.serveMCP(ctx, tools.tools(), mcptools.Stdio{In: opts.io.in, Out: opts.io.out, Err: opts.io.errOut, Version: opts.version, Debug: opts.debug})
}
