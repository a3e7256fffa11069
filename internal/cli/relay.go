package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/lines"
	"github.com/peerctl/peerctl/ports/wire"
)

// relayIn is one input line (docs/OUTPUT.md); the output lines are
// wire.RelayLine's.
type relayIn struct {
	ID   json.RawMessage `json:"id"`
	To   *string         `json:"to"`
	Text *string         `json:"text"`
	// Durable (seconds) and Key send durably through peerctl serve
	// (send --durable --key).
	Durable int    `json:"durable"`
	Key     string `json:"key"`
}

// relayOptions are relay's request and what it needs: the streams, the
// node of the host, and the relay's name and timeout.
type relayOptions struct {
	io    *iostreams
	node  func(domain.Dest) (app.Node, error)
	dest  domain.Dest
	query wire.RelayQuery
}

func newRelayCmd(f *factory) *cobra.Command {
	opts := &relayOptions{io: f.io, node: f.node}
	var hosts []string
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Send and receive as a JSON-lines service (one long-lived courier)",
		Long:  helpLong(`Send and hear as a JSON-lines service: requests on stdin; receipts, refusals, inbound on stdout`, "relay"),
		Example: `  echo '{"id":1,"to":"proj-89","text":"status?"}' | peerctl relay --name ci-bot
  coproc peerctl relay --name ci-bot   # then write requests, read lines
  # the relay ends with its stdin: keep it open (here 10m) to hear replies
  (cat reqs.jsonl; sleep 600) | peerctl relay | jq -c 'select(.type=="inbound")'
  peerctl relay --host dev-box --name ci-bot`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := &opts.query
			if q.Timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a positive duration such as 30s", q.Timeout)}
			}
			if err := validName("--name", q.Name, cmd.Flags().Changed("name")); err != nil {
				return err
			}
			dests, err := parseHosts(hosts, false)
			if err != nil {
				return err
			}
			if isNullDevice(f.io.out) {
				return usageError{errors.New("stdout is closed or the null device: every receipt and refusal would be lost, so nothing is sent; give the relay a reader")}
			}
			f.started()
			if len(dests) == 1 {
				opts.dest = dests[0]
			}
			return runRelay(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.query.Name, "name", "", `the relay's display name, seen by receivers (default "peerctl")`)
	fl.DurationVar(&opts.query.Timeout, "timeout", 30*time.Second, "bound for one send (e.g. 3s, 1m)")
	f.flags.add(cmd)
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// runRelay runs the relay of opts.dest's node (app.Node.Relay) on stdin, its lines printed on
// stdout. When stdout's reader goes away, or a write fails, the relay is
// stopped (its ctx ends: nothing more is sent) and the command fails
// (errRelayOutput, exit 1); otherwise it ends as the relay did.
func runRelay(ctx context.Context, opts *relayOptions) error {
	n, err := opts.node(opts.dest)
	if err != nil {
		return err
	}
	gone, stopOut := opts.io.streamOut()
	defer stopOut()
	out := &relayOut{w: opts.io.out, failed: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-gone:
			out.readerGone()
		case <-out.failed:
		case <-ctx.Done():
		}
		cancel()
	}()
	err = n.Relay(ctx, opts.query, opts.io.in, out.line)
	if stopped, after, werr := out.stopped(); stopped || errors.Is(err, errReaderGone) {
		return errRelayOutput(werr, after)
	}
	return err
}

// relayOut writes whole lines to stdout, one writer at a time. After the
// first failed write, or once the reader has gone, it writes nothing more,
// and failed is closed.
type relayOut struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	gone   bool
	failed chan struct{}
	// last is the last input line whose answer was written; failedAt the
	// one whose answer could not be (0: none).
	last, failedAt int
}

// line writes l as one line; the error is the first write's that failed
// (errReaderGone once the reader has gone).
func (o *relayOut) line(l wire.RelayLine) error {
	var b bytes.Buffer
	if wire.EncodeJSON(&b, l, "", true) != nil {
		return nil // cannot happen: every line is a plain struct
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.gone:
		return errReaderGone
	case o.err == nil:
		if _, o.err = o.w.Write(b.Bytes()); o.err != nil {
			o.failedAt = l.Answers()
			close(o.failed)
		} else if l.Answers() > 0 {
			o.last = l.Answers()
		}
	}
	return o.err
}

// readerGone stops the writing: stdout's reader has gone.
func (o *relayOut) readerGone() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.gone && o.err == nil {
		o.gone = true
		close(o.failed)
	}
}

// stopped says whether the writing stopped, the input line it stopped
// after, and the write error that stopped it (nil: the reader went).
func (o *relayOut) stopped() (stopped bool, after int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	after = o.last
	if o.failedAt > 0 {
		after = o.failedAt
	}
	return o.gone || o.err != nil, after, o.err
}

// errReaderGone is a relay's stop when stdout's reader has gone.
var errReaderGone = errors.New("stdout's reader has gone")

// errRelayOutput is the relay's end when its answers cannot be written:
// it stops taking input, so nothing more is sent unheard (exit 1).
func errRelayOutput(err error, after int) error {
	why := "its reader has gone"
	if err != nil {
		why = err.Error()
	}
	return fmt.Errorf("relay: stdout is gone (%s): stopped after input line %d, nothing more is sent", why, after)
}

// relayHere is this machine's relay (app.LocalNode.Relaying): it builds
// the graph with the couriers, named q.Name ("peerctl" when none), warns
// on stderr of each courier that did not start, then runs the relay
// (relayServer.run).
func (c *factory) relayHere(ctx context.Context, q wire.RelayQuery, requests io.Reader, emit func(wire.RelayLine) error) error {
	var relay *app.Relay
	if c.entrance != domain.EntranceHost {
		c.entrance = domain.EntranceRelay // the trust policy's sender of every request
	}
	fxApp, err := c.graph(options{timeout: q.Timeout, from: q.Name}, &relay)
	if err != nil {
		return err
	}
	name := q.Name
	if name == "" {
		name = "peerctl"
	}
	var mu sync.Mutex
	put := func(l wire.RelayLine) error {
		mu.Lock()
		defer mu.Unlock()
		return emit(l)
	}
	r := &relayServer{io: c.io, relay: relay, name: name, timeout: q.Timeout, serve: c.serveClient}
	return r.run(ctx, fxApp, requests, put)
}

// relayServer is one relay's run on this machine: its use case, its name
// and timeout (its durable requests carry them too), the streams and the
// client of peerctl serve (durable requests).
type relayServer struct {
	io      *iostreams
	relay   *app.Relay
	name    string
	timeout time.Duration
	serve   func() *serveClient
}

// lifecycle is the part of *fx.App the relay drives.
type lifecycle interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// run starts the relay, then reads requests until they end or ctx
// does, answering each in order, while inbound messages are emitted as
// they come; then it stops the relay. When emit fails, or stdout's reader
// has gone before a send (errReaderGone), it stops reading requests and
// returns that error: a send whose answer cannot be written is not made.
func (c *relayServer) run(ctx context.Context, fxApp lifecycle, requests io.Reader, emit func(wire.RelayLine) error) (err error) {
	relay, name := c.relay, c.name
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		return wiring.Cause(err)
	}
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for in := range relay.Inbound() {
			_ = emit(wire.RelayInbound{Type: "inbound", Inbound: app.InboundOf(in)})
		}
	}()
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := fxApp.Stop(stopCtx); serr != nil && err == nil {
			err = fmt.Errorf("stop relay: %w", serr)
		}
		<-printed
	}()
	unstarted := relay.Unstarted()
	for _, h := range slices.Sorted(maps.Keys(unstarted)) {
		fmt.Fprintf(c.io.errOut, "peerctl: warning: relay: the %s courier did not start, sends to %s sessions are refused until it does: %s\n", h, h, safe(unstarted[h].Error()))
	}
	if err := emit(wire.RelayReady{Type: "ready", Protocol: wire.RelayProtocol, Name: name}); err != nil {
		return err
	}
	lines := make(chan relayLine)
	go readRelayLines(requests, lines)
	for {
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			if readerGoneNow(c.io.out) {
				return errReaderGone
			}
			// A send under way finishes (bounded by --timeout) even after Ctrl-C.
			if err := emit(c.send(context.WithoutCancel(ctx), l)); err != nil {
				return err
			}
		}
	}
}

// relayLine is one input line, or why it could not be read.
type relayLine struct {
	n    int
	text []byte
	err  error
}

// readRelayLines reads r line by line into lines until EOF (then closes
// lines). A line over lines.MaxRequest is skipped to its end and reported.
// Blank lines are ignored.
func readRelayLines(r io.Reader, out chan<- relayLine) {
	defer close(out)
	lr := lines.NewReader(r, lines.MaxRequest)
	for {
		line, long, err := lr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return
		case err != nil:
			out <- relayLine{n: lr.N() + 1, err: fmt.Errorf("read stdin: %w", err)}
			return
		case long:
			out <- relayLine{n: lr.N(), err: fmt.Errorf("line %d is over %d bytes", lr.N(), lines.MaxRequest)}
		case len(bytes.TrimSpace(line)) > 0:
			out <- relayLine{n: lr.N(), text: line}
		}
	}
}

// relayDecodeProblem says in the request's own words why a line did not
// decode as a relayIn: which field, what it was and what was wanted, or
// where the JSON broke. It never names Go types (encoding/json's own text
// does: "... into Go value of type main.relayIn").
func relayDecodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var ke *jsonexact.KeyError
	switch {
	case errors.As(err, &ke):
		return ke.Error()
	case errors.Is(err, jsonexact.ErrNotObject):
		return "the line is " + err.Error()
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("the line is a JSON %s, not an object", te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("%q is a JSON %s, want a string", te.Field, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("the line is not valid JSON (it goes wrong at byte %d)", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON object ends before it is complete"
	}
	// Other errors are about the input alone.
	return strings.TrimPrefix(err.Error(), "json: ")
}

// send answers one input line with a receipt or a refusal.
func (c *relayServer) send(ctx context.Context, l relayLine) wire.RelayLine {
	refuse := func(id json.RawMessage, reason, detail string) wire.RelayRefusal {
		return wire.RelayRefusal{Type: "refusal", ID: id, Line: l.n, Reason: reason, Detail: detail}
	}
	if l.err != nil {
		return refuse(nil, wire.RelayInvalidRequest, l.err.Error())
	}
	var in relayIn
	var raw json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(l.text))
	err := dec.Decode(&raw)
	if err == nil && dec.More() {
		return refuse(nil, wire.RelayInvalidRequest, fmt.Sprintf("line %d: one JSON object per line", l.n))
	}
	if err == nil {
		// Keys exactly as written, each once: encoding/json would match
		// "TO" to "to" and let the last of two win.
		err = jsonexact.Strict.Unmarshal(raw, &in)
	}
	if err != nil {
		var ke *jsonexact.KeyError
		if errors.As(err, &ke) && ke.Key != "id" {
			var id struct {
				ID json.RawMessage `json:"id"`
			}
			_ = jsonexact.Unmarshal(raw, &id)
			in.ID = id.ID
		}
		return refuse(in.ID, wire.RelayInvalidRequest, fmt.Sprintf(`line %d: want {"id": optional, "to": ADDRESS, "text": TEXT}: %s`, l.n, relayDecodeProblem(err)))
	}
	if why := inexactJSON(l.text); why != "" {
		// Decoding would have put U+FFFD in place of what the host wrote.
		id, reason := in.ID, wire.RelayInvalidRequest
		if inexactJSON(id) != "" {
			id = nil
		}
		var text struct {
			Text json.RawMessage `json:"text"`
		}
		if json.Unmarshal(l.text, &text) == nil && inexactJSON(text.Text) != "" {
			why, reason = inexactJSON(text.Text), domain.ReasonInvalidMessage.String()
		}
		return refuse(id, reason, fmt.Sprintf("line %d holds %s; JSON decoding would put U+FFFD in its place, so nothing was sent", l.n, why))
	}
	switch {
	case in.To == nil || *in.To == "":
		return refuse(in.ID, wire.RelayInvalidRequest, fmt.Sprintf(`line %d: "to" (the session's address) is missing or empty`, l.n))
	case in.Text == nil:
		return refuse(in.ID, wire.RelayInvalidRequest, fmt.Sprintf(`line %d: "text" is missing`, l.n))
	}
	if in.Durable != 0 || in.Key != "" {
		return c.durable(ctx, l, in, refuse)
	}
	res, err := c.relay.Send(ctx, app.SendRequest{Address: *in.To, Text: *in.Text})
	if errors.Is(err, domain.ErrHeld) && c.serve().holds(err, wire.SendQuery{}) {
		// Kept in peerctl serve's outbox for a person's approval.
		return c.durable(ctx, l, in, refuse)
	}
	if err != nil {
		if r, ok := domain.AsRefusal(err); ok {
			out := refuse(in.ID, r.Reason.String(), r.Detail)
			out.Candidates = r.Candidates
			out.Suggestions = r.Suggestions
			return out
		}
		if errors.Is(err, domain.ErrBadAddress) || errors.Is(err, domain.ErrBadEndpoint) {
			return refuse(in.ID, wire.RelayInvalidRequest, err.Error())
		}
		return refuse(in.ID, wire.RelayError, err.Error())
	}
	t := res.Target
	return wire.RelayReceipt{Type: "receipt", ID: in.ID, Line: l.n, Outcome: res.Receipt.Outcome, MsgID: res.Receipt.MsgID,
		Transport: res.Receipt.Transport, SessionID: t.ID(), PID: t.PID(), Name: t.Name(),
		ClaudeResult: res.Receipt.ClaudeResult, ElapsedMs: res.Elapsed.Milliseconds()}
}

// durable answers a request with "durable" or "key": the send runs in
// peerctl serve (started on demand) as send --json --durable --key would,
// with the relay's harness flags and name; its receipt or refusal becomes
// the line's.
func (c *relayServer) durable(ctx context.Context, l relayLine, in relayIn, refuse func(json.RawMessage, string, string) wire.RelayRefusal) wire.RelayLine {
	switch {
	case in.Durable < 0 || in.Durable > mcptools.MaxDurableSeconds:
		return refuse(in.ID, wire.RelayInvalidRequest, fmt.Sprintf(`line %d: "durable" %d: want 0 to %d seconds`, l.n, in.Durable, mcptools.MaxDurableSeconds))
	case in.Key != "" && checkKey(in.Key) != nil:
		return refuse(in.ID, wire.RelayInvalidRequest, fmt.Sprintf(`line %d: "key"%v`, l.n, checkKey(in.Key)))
	}
	out, err := c.serve().serveSend(ctx, durableSend{to: *in.To, text: *in.Text, seconds: in.Durable, key: in.Key, from: c.name, timeout: c.timeout})
	if err != nil {
		if r, ok := domain.AsRefusal(err); ok {
			return refuse(in.ID, r.Reason.String(), r.Detail)
		}
		return refuse(in.ID, wire.RelayError, err.Error())
	}
	return wire.RelayReceipt{Type: "receipt", ID: in.ID, Line: l.n, Outcome: out.Outcome, MsgID: out.MsgID, Transport: out.Transport,
		SessionID: out.SessionID, PID: out.PID, Name: out.Name, ClaudeResult: out.ClaudeResult, ElapsedMs: out.ElapsedMs, Outbox: out.Outbox}
}
