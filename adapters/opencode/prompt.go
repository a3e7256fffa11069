package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// PromptName is the prompt transport's name (the default and only one).
const PromptName = "prompt"

// Defaults of Config.
const (
	// DefaultTimeout bounds one delivery when Config.Timeout is 0.
	DefaultTimeout = 30 * time.Second
	// DefaultWindow is how long a delivery waits for opencode's
	// message.updated when Config.Window is 0 (measured: about 0.36 s).
	DefaultWindow = 10 * time.Second
	// connectWait bounds the wait for the event stream's first event.
	connectWait = 5 * time.Second
)

// Config shapes the transport. The zero value is usable.
type Config struct {
	// Auth is the servers' password (zero: none).
	Auth Auth
	// From is the sender name the envelope carries ("": "peerctl").
	From string
	// Timeout bounds one delivery; Window the wait for opencode's receipt
	// (negative: not waited, the outcome is "posted").
	Timeout, Window time.Duration
	// Log hears each step at debug level (never the password); nil:
	// silent.
	Log *slog.Logger
	// now draws message ids' times (nil: time.Now); tests set it.
	now func() time.Time
	// prover proves each connection the target server's (zero: /proc).
	prover sockowner.Prover
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.From == "" {
		c.From = "peerctl"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Envelope is the header part an opencode session receives before the
// text (a part of its own, so the text part is the text byte for byte):
//
//	[peerctl: a message from another session, from "<from>"]
//
// from is flattened to one line of at most 200 characters and quoted as
// Go quotes strings, so nothing in a name can end the header early.
func Envelope(from string) string {
	return "[peerctl: a message from another session, from " + strconv.Quote(oneLine(from)) + "]\n"
}

// Prompt delivers with POST /session/{id}/prompt_async (opencode-ai
// 1.18.33) carrying a message id peerctl draws (NewMessageID) and two text
// parts, the Envelope and the text. Before posting it opens GET /event,
// and the receipt is opencode's own message.updated event for that message
// id in that session (outcome delivered). An answer other than 204 is
// delivery_failed quoting opencode; a post whose answer never came is
// outcome_unknown. The v2 /api/session/{id}/prompt is never used (the TUI
// does not show that turn and the model gets no history, measured).
type Prompt struct {
	cfg Config
	// kept are the clients the registry's last read kept (nil: none): a
	// delivery to a server it found takes that server's.
	kept *servers
}

var (
	_ ports.Transport = (*Prompt)(nil)
	_ ports.Couriers  = (*Prompt)(nil)
)

// NewPrompt builds the transport.
func NewPrompt(cfg Config) *Prompt { return &Prompt{cfg: cfg.withDefaults()} }

// Name returns "prompt".
func (t *Prompt) Name() string { return PromptName }

// check refuses a target the transport cannot serve.
func check(target domain.Session) error {
	if target.Harness() != Kind {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "the %s transport speaks opencode's HTTP API; %s is a %s session", PromptName, target.Label(), target.Harness())
	}
	if !target.Addressable() {
		return domain.Refuse(domain.ReasonNotAddressable, "%s: %s", target.Label(), target.Unaddressable())
	}
	if why := unaddressable(target.Record()); why != "" {
		return domain.Refuse(domain.ReasonNotAddressable, "%s: %s", target.Label(), why)
	}
	return nil
}

// Plan shows the POST (the message id is drawn by a real run).
func (t *Prompt) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := check(target); err != nil {
		return domain.Plan{}, err
	}
	return domain.Plan{Transport: PromptName, Socket: target.SocketPath(),
		Call:  "POST http://" + target.SocketPath() + "/session/" + target.ID() + "/prompt_async",
		Frame: PromptBody("msg_…", Envelope(t.cfg.From), msg.Text())}, nil
}

// Deliver opens the server's event stream, posts msg, waits for the
// receipt and closes the stream.
func (t *Prompt) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	c, events, errc, err := t.open(ctx, target)
	if err != nil {
		return domain.Receipt{}, unsent(target, err)
	}
	defer c.Close()
	rec, _, err := post(ctx, t.cfg, c, events, errc, target, msg, nil)
	return rec, err
}

// open opens the event stream of target's server (Events) on the client
// the registry's read kept for that server (its idle connection, proved
// the server's, carries the stream) or a new one, and meanwhile proves
// the connection of the post to come (Warm). On an error the client is
// closed.
func (t *Prompt) open(ctx context.Context, target domain.Session) (*Client, <-chan Event, <-chan error, error) {
	start := time.Now()
	var c *Client
	if t.kept != nil {
		c = t.kept.take(serverKey(target.PID(), target.Record().ProcStart, target.SocketPath()))
	}
	kept := c != nil
	if !kept {
		c = NewClient(target.SocketPath(), target.PID(), t.cfg.Auth, t.cfg.prover)
	}
	c.Warm(ctx)
	events, errc, err := c.Events(ctx, connectWait)
	t.cfg.Log.Debug("opencode event stream", "server", target.SocketPath(), "read's connection", kept, "took", time.Since(start), "err", err)
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, events, errc, nil
}

func failed(format string, args ...any) *domain.Refusal {
	return domain.Refuse(domain.ReasonDeliveryFailed, format, args...)
}

// unsent is the refusal of a call to target's server that sent nothing:
// identity_mismatch when the listener at its address is not the server
// process's (sockowner.Mismatch), else delivery_failed saying why.
func unsent(target domain.Session, err error) *domain.Refusal {
	var m *sockowner.Mismatch
	var pe *PasswordError
	switch {
	case errors.As(err, &m):
		return domain.Refuse(domain.ReasonIdentityMismatch, "opencode session %s: %v, so it is not the opencode %s (pid %d) that serves the session; nothing was sent", target.ID(), m, target.Kind(), target.PID())
	case errors.As(err, &pe):
		return failed("opencode session %s: %v; nothing was sent", target.ID(), pe)
	}
	return failed("opencode server %s (pid %d): %v; nothing was sent", target.SocketPath(), target.PID(), err)
}

// post posts msg into target's session on c and waits, on events (the
// server's event stream, opened before), for the receipt; onID (when not
// nil) is told the message id before the post.
func post(ctx context.Context, cfg Config, c *Client, events <-chan Event, errc <-chan error, target domain.Session, msg domain.Message, onID func(string)) (domain.Receipt, string, error) {
	id := NewMessageID(cfg.now())
	if onID != nil {
		onID(id)
	}
	err := c.PromptAsync(ctx, target.ID(), id, Envelope(cfg.From), msg.Text())
	cfg.Log.Debug("opencode prompt_async", "server", target.SocketPath(), "session", target.ID(), "message", id, "auth", cfg.Auth.String(), "err", err)
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		return domain.Receipt{}, id, failed("opencode answered prompt_async for session %s with %s; nothing was sent", target.ID(), he.Error())
	case err != nil && ctx.Err() == nil && !sent(err):
		return domain.Receipt{}, id, unsent(target, err)
	case err != nil:
		return domain.Receipt{}, id, domain.Refuse(domain.ReasonOutcomeUnknown, "opencode server %s: %v; the session may or may not have message %s: look before sending again", target.SocketPath(), err, id)
	}
	rec := domain.Receipt{Transport: PromptName, MsgID: id}
	if cfg.Window < 0 {
		rec.Outcome, rec.Detail = domain.OutcomePosted.String(), "prompt_async 204; message.updated not awaited"
		return unwatched(target, rec), id, nil
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Window)
	defer cancel()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				rec.Outcome = domain.OutcomePosted.String()
				rec.Detail = fmt.Sprintf("prompt_async 204; the event stream ended before message.updated for %s (%v)", id, <-errc)
				return unwatched(target, rec), id, nil
			}
			if ev.Type != "message.updated" {
				continue
			}
			if m, ok := messageOf(ev); ok && m.ID == id && m.SessionID == target.ID() {
				rec.Outcome, rec.Detail = domain.OutcomeDelivered.String(), "message.updated: message "+id
				return unwatched(target, rec), id, nil
			}
		case <-wctx.Done():
			rec.Outcome = domain.OutcomePosted.String()
			rec.Detail = fmt.Sprintf("prompt_async 204; no message.updated for %s within %s", id, cfg.Window)
			return unwatched(target, rec), id, nil
		}
	}
}

// Unwatched is what the receipt of a message to a --port TUI's session
// adds (docs/OPENCODE.md, "Who sees the turn"): the TUI shows one of the
// sessions its server serves, and which one cannot be read from outside
// it (opencode-ai 1.18.33: no route and no file says it), so the turn may
// run with no one watching.
const Unwatched = "a --port TUI shows one session at a time and which one cannot be read from outside it: if it is not showing this session, the turn runs with no one watching (its answer is kept in the session; the TUI's session list opens it)"

// unwatched adds Unwatched to the receipt of a --port TUI's session.
func unwatched(target domain.Session, rec domain.Receipt) domain.Receipt {
	if target.Kind() == KindTUI {
		rec.Detail += "; " + Unwatched
	}
	return rec
}

// sent reports whether a request error came after the request may have
// reached the server: anything but a failed connect, a listener that is
// not the server's or could not be proved its (closed unwritten), or a
// refused password (401: opencode took nothing).
func sent(err error) bool {
	var op *net.OpError
	var m *sockowner.Mismatch
	switch {
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &m), errors.Is(err, sockowner.ErrUnproven), errors.Is(err, ErrUnauthorized):
		return false
	}
	return true
}

// messageInfo is the info of a message.updated event (opencode-ai
// 1.18.33): {"sessionID":…,"info":{"id":"msg_…","role":"user"|"assistant",
// "parentID":…,"finish":"stop"|"tool-calls"|…,"time":{"created":ms,
// "completed":ms},"error":{…}}}.
type messageInfo struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	Role      string `json:"role"`
	ParentID  string `json:"parentID"`
	Finish    string `json:"finish"`
	Time      struct {
		Completed int64 `json:"completed"`
	} `json:"time"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

func messageOf(ev Event) (messageInfo, bool) {
	var p struct {
		Info messageInfo `json:"info"`
	}
	if json.Unmarshal(ev.Properties, &p) != nil || p.Info.ID == "" {
		return messageInfo{}, false
	}
	return p.Info, true
}

// partInfo is the part of a message.part.updated event:
// {"part":{"id":"prt_…","messageID":…,"sessionID":…,"type":"text","text":…}}.
type partInfo struct {
	ID        string `json:"id"`
	MessageID string `json:"messageID"`
	SessionID string `json:"sessionID"`
	Type      string `json:"type"`
	Text      string `json:"text"`
}

func partOf(ev Event) (partInfo, bool) {
	var p struct {
		Part partInfo `json:"part"`
	}
	if json.Unmarshal(ev.Properties, &p) != nil || p.Part.ID == "" {
		return partInfo{}, false
	}
	return p.Part, true
}

// oneLine keeps a title to one line of at most 200 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
