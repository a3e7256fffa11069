package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// RelayProtocol is the version of `peerctl relay`'s line protocol
// (docs/OUTPUT.md): version 1 has the output types ready, receipt, refusal
// and inbound. A new type or a changed meaning gets a new version; new
// fields may be added to a type within a version.
const relayProtocol = 1

// relayMaxLine bounds one input line: a 64 KiB message escaped as JSON
// (at most 6 bytes per byte, \u00XX) plus the address and id fits.
const relayMaxLine = 1 << 20

// Relay refusal words beyond the domain's reasons.
const (
	// reasonInvalidRequest: the input line is not a send request.
	reasonInvalidRequest = "invalid_request"
	// reasonError: an unexpected error (exit 1 for a one-shot send).
	reasonError = "error"
)

// relayIn is one input line.
type relayIn struct {
	ID   json.RawMessage `json:"id"`
	To   *string         `json:"to"`
	Text *string         `json:"text"`
}

// relayReady is the first output line.
type relayReady struct {
	Type     string `json:"type"` // "ready"
	Protocol int    `json:"protocol"`
	Name     string `json:"name"`
}

// relayReceipt is the output line for a send the courier handed over.
type relayReceipt struct {
	Type         string          `json:"type"` // "receipt"
	ID           json.RawMessage `json:"id,omitempty"`
	Line         int             `json:"line"`
	Outcome      string          `json:"outcome"`
	MsgID        string          `json:"msgId"`
	Transport    string          `json:"transport"`
	SessionID    string          `json:"sessionId"`
	PID          int             `json:"pid"`
	Name         string          `json:"name"`
	ClaudeResult string          `json:"claudeResult,omitempty"`
	ElapsedMs    int64           `json:"elapsedMs"`
}

// relayRefusal is the output line for a send that was refused or failed.
type relayRefusal struct {
	Type       string             `json:"type"` // "refusal"
	ID         json.RawMessage    `json:"id,omitempty"`
	Line       int                `json:"line"`
	Reason     string             `json:"reason"`
	Detail     string             `json:"detail"`
	Candidates []domain.Candidate `json:"candidates,omitempty"`
}

// relayInbound is the output line for a message that reached the relay.
type relayInbound struct {
	Type string `json:"type"` // "inbound"
	inboundJSON
}

func (c *cli) relayCmd() *cobra.Command {
	var (
		name    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Send and receive as a JSON-lines service (one long-lived courier)",
		Long: `Run one long-lived courier in the foreground and use it as a JSON-lines service, so a
program in any language can send to sessions and hear their answers.

Each stdin line is one send request:
  {"id": <optional, any JSON value, echoed>, "to": "<address>", "text": "<message>"}
The address is what send takes (session id, unique id prefix, exact name, endpoint); it is
resolved and verified on a fresh registry read for every line, exactly as send does.

Stdout carries one JSON object per line (protocol 1, docs/OUTPUT.md):
  {"type":"ready","protocol":1,"name":...}            once, first, when it reads input
  {"type":"receipt","id":...,"line":N,"outcome":"queued","msgId":...,...}
  {"type":"refusal","id":...,"line":N,"reason":...,"detail":...}
  {"type":"inbound","from":...,"fromName":...,"text":...,"at":...}
Every request gets exactly one receipt or refusal, in input order. Every message another
session sends to the relay (its name is --name) comes out as an inbound line, whenever it
arrives. A line that is not such a request gets a refusal with reason invalid_request and
the relay goes on. Inbound text is data: it is never run or sent on.

One relay reaches both harnesses: Claude Code sessions through the courier (an inbound
"from" is "uds:<socket>"), Qwen Code sessions through a reply inbox of its own (the frame's
"from", the session's ipcPath; the same text twice to one Qwen Code session within 30 s is
dropped by Qwen Code as a duplicate). The courier is restarted if it dies; a send in flight
then ends in a delivery_failed refusal, and so does every send while a courier cannot start.
At the end of stdin the relay finishes the pending sends and exits 0; so does Ctrl-C, after
the send in flight. Messages that arrive after that are not heard. Each line's refusal is
data on stdout, not an exit code: the relay itself exits 0 at the end of stdin or on Ctrl-C.

` + exitCodesFor(exitOK, exitError, exitUsage) + `
` + exitRowAs(exitDeliveryFailed, domain.ReasonDeliveryFailed, "no courier can start, neither Claude Code's nor Qwen Code's reply inbox (while one can, sends only the other could serve are refused and the relay goes on)"),
		Example: `  printf '%s\n' '{"id":1,"to":"proj-89","text":"status?"}' | peerctl relay --name ci-bot
  coproc peerctl relay --name ci-bot   # then write requests, read lines`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a positive duration such as 30s", timeout)}
			}
			if err := validName("--name", name, cmd.Flags().Changed("name")); err != nil {
				return err
			}
			c.started()
			var relay *app.Relay
			fxApp, err := c.graph(options{timeout: timeout, from: name}, &relay)
			if err != nil {
				return err
			}
			if name == "" {
				name = "peerctl"
			}
			return c.runRelay(cmd.Context(), fxApp, relay, name)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", `the relay's display name, seen by receivers (default "peerctl")`)
	f.DurationVar(&timeout, "timeout", 30*time.Second, "bound for one send (e.g. 3s, 1m)")
	c.harnessFlags(cmd)
	return cmd
}

// relayOut writes whole lines to stdout, one writer at a time.
type relayOut struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (o *relayOut) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		_, o.err = o.w.Write(append(b, '\n'))
	}
}

// runRelay starts the relay, then reads requests until stdin ends or ctx
// does, answering each in order, while inbound messages are printed as
// they come; then it stops the relay.
func (c *cli) runRelay(ctx context.Context, fxApp lifecycle, relay *app.Relay, name string) (err error) {
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		return unwrapFx(err)
	}
	// A reader that goes away makes writes fail (EPIPE), not kill peerctl.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	out := &relayOut{w: c.stdout}
	out.line(relayReady{Type: "ready", Protocol: relayProtocol, Name: name})
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for in := range relay.Inbound() {
			out.line(relayInbound{Type: "inbound", inboundJSON: toInboundJSON(in)})
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
	lines := make(chan relayLine)
	go readRelayLines(c.stdin, lines)
	for {
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			// A send under way finishes (bounded by --timeout) even after Ctrl-C.
			out.line(c.relaySend(context.WithoutCancel(ctx), relay, l))
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
// lines). A line over relayMaxLine is skipped to its end and reported.
// Blank lines are ignored.
func readRelayLines(r io.Reader, lines chan<- relayLine) {
	defer close(lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		var buf []byte
		long := false
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			if len(buf)+len(part) > relayMaxLine {
				long = true
			} else {
				buf = append(buf, part...)
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		switch {
		case long:
			lines <- relayLine{n: n, err: fmt.Errorf("line %d is over %d bytes", n, relayMaxLine)}
		case len(bytes.TrimSpace(buf)) > 0:
			lines <- relayLine{n: n, text: buf}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				lines <- relayLine{n: n + 1, err: fmt.Errorf("read stdin: %w", err)}
			}
			return
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
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("the line is a JSON %s, not an object", te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("%q is a JSON %s, want a string", te.Field, te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("the line is not valid JSON (it goes wrong at byte %d)", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON object ends before it is complete"
	}
	// Decoder's other errors are about the input alone, e.g.
	// `json: unknown field "extra"`.
	return strings.TrimPrefix(err.Error(), "json: ")
}

// relaySend answers one input line with a receipt or a refusal.
func (c *cli) relaySend(ctx context.Context, relay *app.Relay, l relayLine) any {
	refuse := func(id json.RawMessage, reason, detail string) relayRefusal {
		return relayRefusal{Type: "refusal", ID: id, Line: l.n, Reason: reason, Detail: detail}
	}
	if l.err != nil {
		return refuse(nil, reasonInvalidRequest, l.err.Error())
	}
	var in relayIn
	dec := json.NewDecoder(bytes.NewReader(l.text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return refuse(nil, reasonInvalidRequest, fmt.Sprintf(`line %d: want {"id": optional, "to": ADDRESS, "text": TEXT}: %s`, l.n, relayDecodeProblem(err)))
	}
	if dec.More() {
		return refuse(in.ID, reasonInvalidRequest, fmt.Sprintf("line %d: one JSON object per line", l.n))
	}
	if why := inexactJSON(l.text); why != "" {
		// Decoding would have put U+FFFD in place of what the host wrote.
		id, reason := in.ID, reasonInvalidRequest
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
		return refuse(in.ID, reasonInvalidRequest, fmt.Sprintf(`line %d: "to" (the session's address) is missing or empty`, l.n))
	case in.Text == nil:
		return refuse(in.ID, reasonInvalidRequest, fmt.Sprintf(`line %d: "text" is missing`, l.n))
	}
	res, err := relay.Send(ctx, app.SendRequest{Address: *in.To, Text: *in.Text})
	if err != nil {
		if r, ok := domain.AsRefusal(err); ok {
			out := refuse(in.ID, r.Reason.String(), r.Detail)
			out.Candidates = r.Candidates
			return out
		}
		if errors.Is(err, domain.ErrBadAddress) || errors.Is(err, domain.ErrBadEndpoint) {
			return refuse(in.ID, reasonInvalidRequest, err.Error())
		}
		return refuse(in.ID, reasonError, err.Error())
	}
	t := res.Target
	return relayReceipt{Type: "receipt", ID: in.ID, Line: l.n, Outcome: res.Receipt.Outcome, MsgID: res.Receipt.MsgID,
		Transport: res.Receipt.Transport, SessionID: t.ID(), PID: t.PID(), Name: t.Name(),
		ClaudeResult: res.Receipt.ClaudeResult, ElapsedMs: res.Elapsed.Milliseconds()}
}
