package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// AppServerName is the app-server transport's name (the default).
const AppServerName = "app-server"

// DefaultTimeout bounds one delivery when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// DefaultWindow is how long a delivery waits for turn/started when
// Config.Window is 0.
const DefaultWindow = 10 * time.Second

// Config shapes the transports. The zero value is usable but for Home.
type Config struct {
	// Home is the Codex home whose daemon serves the threads.
	Home string
	// Version is peerctl's, told to the daemon (clientInfo.version).
	Version string
	// From is the sender name the envelope carries ("": "peerctl").
	From string
	// Timeout bounds one delivery; Window the wait for turn/started
	// (negative: not waited, the outcome is "posted").
	Timeout, Window time.Duration
	// Program is the codex program the queue transport runs ("": codex
	// on PATH).
	Program string
	// Env is the queue transport's environment (nil: os.Environ()).
	Env []string
	// Log hears each step at debug level; nil: silent.
	Log *slog.Logger

	// dirs are the folders the control socket may link into (nil:
	// codexapp.DaemonDir of our uid); tests set it.
	dirs []string
	// procRoot is where processes are read ("": /proc); tests set it.
	procRoot string
	// ask bounds each step before the text is handed over (0:
	// DefaultAsk); tests set it.
	ask time.Duration
	// memo is the registry's (see daemonMemo); nil remembers nothing.
	memo *daemonMemo
}

// getuid is os.Getuid (tests replace it).
var getuid = os.Getuid

// proc is the process root the daemon's state is read from.
func (c Config) proc() string {
	if c.procRoot == "" {
		return "/proc"
	}
	return c.procRoot
}

// askBound is the bound of one step before the hand-over.
func (c Config) askBound() time.Duration {
	if c.ask <= 0 {
		return DefaultAsk
	}
	return c.ask
}

// silent says err as a daemon that did not answer within bound, when it
// is one (daemonSilent).
func (c Config) silent(bound time.Duration, err error) error {
	return daemonSilent(c.Home, c.proc(), bound, err)
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
	return c
}

// Envelope is the text a Codex thread receives for msg: one header line
// naming the sender, then the text byte for byte:
//
//	[peerctl: a message from another session, from "<from>"]
//	<text>
//
// from is flattened to one line of at most 200 characters and quoted as
// Go quotes strings, so nothing in a name can end the header early.
func Envelope(from, text string) string {
	return "[peerctl: a message from another session, from " + strconv.Quote(oneLine(from)) + "]\n" + text
}

// AppServer delivers through the daemon's app-server protocol:
// initialize, thread/resume (which subscribes the connection to the
// thread), turn/start with the envelope as the one text input. The receipt
// is Codex's turn/started for the turn turn/start named (outcome
// delivered); a busy thread takes the text into its running turn (the
// same turn id comes back, measured on 0.171.0), which is delivered too,
// saying so. An error answer is delivery_failed quoting Codex.
type AppServer struct{ cfg Config }

var _ ports.Transport = (*AppServer)(nil)

// NewAppServer builds the transport.
func NewAppServer(cfg Config) *AppServer { return &AppServer{cfg: cfg.withDefaults()} }

// Name returns "app-server".
func (t *AppServer) Name() string { return AppServerName }

// check refuses a target the transport cannot serve.
func check(cfg Config, target domain.Session, transport string) error {
	if target.Harness() != Kind {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "the %s transport speaks Codex's protocol; session %s is a %s session", transport, target.ID(), target.Harness())
	}
	if !target.Addressable() {
		return domain.Refuse(domain.ReasonNotAddressable, "session %s: %s", target.ID(), target.Unaddressable())
	}
	if !IsUUID(target.ID()) {
		return domain.Refuse(domain.ReasonNotAddressable, "thread id %q is not a UUID", target.ID())
	}
	// A thread that names no socket (a --no-daemon TUI's, or one no
	// process has open) is not the daemon's to check.
	if want, err := codexapp.Socket(cfg.Home, getuid(), cfg.dirs...); err == nil && target.SocketPath() != "" && target.SocketPath() != want {
		return domain.Refuse(domain.ReasonIdentityMismatch, "thread %s is served by the control socket %s, not by %s, --codex-home's (%s)", target.ID(), target.SocketPath(), want, cfg.Home)
	}
	return nil
}

// Plan shows turn/start, the frame that carries the text (after
// initialize, initialized and thread/resume; "id" is drawn by a real run).
func (t *AppServer) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := t.check(target); err != nil {
		return domain.Plan{}, err
	}
	frame, _ := json.Marshal(map[string]any{"method": "turn/start", "params": map[string]any{"threadId": target.ID(),
		"input": []map[string]any{{"type": "text", "text": Envelope(t.cfg.From, msg.Text())}}}})
	return domain.Plan{Transport: AppServerName, Socket: target.SocketPath(), Frame: string(frame)}, nil
}

func (t *AppServer) check(target domain.Session) error {
	if err := check(t.cfg, target, AppServerName); err != nil {
		return err
	}
	if target.Kind() == KindNoDaemon {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "thread %s is held by a TUI started with --no-daemon (pid %d), which no app-server socket reaches: --transport queue does", target.ID(), target.PID())
	}
	return nil
}

// Deliver opens a connection, posts msg and closes it.
func (t *AppServer) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := t.check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	c, err := dial(ctx, t.cfg)
	if err != nil {
		return domain.Receipt{}, err
	}
	defer c.Close()
	rec, _, err := post(ctx, t.cfg, c, c.Notifications(), target, msg, nil)
	return rec, err
}

// dial opens a connection (openDaemon); a failure is delivery_failed, nothing
// was sent.
func dial(ctx context.Context, cfg Config) (*codexapp.Conn, error) {
	c, err := openDaemon(ctx, cfg)
	if err != nil {
		return nil, notSent(ctx, err)
	}
	return c, nil
}

// openDaemon checks the home's control socket and opens a connection to it,
// the handshake bounded by cfg.ask (DefaultAsk); a daemon the registry
// found not answering is not asked again (daemonMemo), and one that took
// the connection and did not answer is said so, naming its pid
// (daemonSilent), its error matching context.DeadlineExceeded.
func openDaemon(ctx context.Context, cfg Config) (*codexapp.Conn, error) {
	sock, err := codexapp.Socket(cfg.Home, getuid(), cfg.dirs...)
	if err != nil {
		return nil, err
	}
	if err := cfg.memo.recall(); err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, cfg.askBound())
	defer cancel()
	c, err := codexapp.Open(octx, sock, cfg.Version)
	err = cfg.silent(cfg.askBound(), err)
	cfg.memo.remember(ctx, err)
	cfg.Log.Debug("codex app-server connect", "socket", sock, "err", err)
	return c, err
}

// notSent is the delivery_failed refusal of a step before the text was
// handed over; an interrupt (Ctrl-C, SIGTERM: ctx canceled) says so.
func notSent(ctx context.Context, err error) *domain.Refusal {
	if ctx.Err() == context.Canceled {
		return failed("interrupted before the message was handed over (%v); nothing was sent", err)
	}
	return failed("%v; nothing was sent", err)
}

func failed(format string, args ...any) *domain.Refusal {
	return domain.Refuse(domain.ReasonDeliveryFailed, format, args...)
}

// post runs thread/resume and turn/start on c and waits, on notes (c's
// notifications, or a copy of them), for the receipt; it returns the turn
// the text started (or joined), told to onTurn (when not nil) as soon as
// turn/start named it. Each call before turn/start (thread/loaded/list,
// thread/resume) is bounded by DefaultAsk (cfg.ask): a daemon that stopped
// answering is said so well before the delivery's timeout, and nothing
// was sent; turn/start, which carries the text, is bounded by ctx alone,
// and no answer to it is outcome_unknown.
func post(ctx context.Context, cfg Config, c *codexapp.Conn, notes <-chan codexapp.Notification, target domain.Session, msg domain.Message, onTurn func(string)) (domain.Receipt, string, error) {
	id := target.ID()
	actx, cancel := context.WithTimeout(ctx, cfg.askBound())
	loaded, err := c.LoadedThreads(actx)
	cancel()
	if err != nil {
		return domain.Receipt{}, "", notSent(ctx, cfg.silent(cfg.askBound(), err))
	}
	if !slices.Contains(loaded, id) {
		return domain.Receipt{}, "", domain.Refuse(domain.ReasonNotLive, "Codex's daemon no longer holds thread %s loaded (its TUI quit); nothing was sent: a resume would run it with no one watching (--transport queue keeps it for the next resume)", id)
	}
	var resumed struct {
		Thread codexapp.Thread `json:"thread"`
	}
	actx, cancel = context.WithTimeout(ctx, cfg.askBound())
	err = c.Call(actx, "thread/resume", map[string]any{"threadId": id, "excludeTurns": true}, &resumed)
	cancel()
	if err != nil {
		return domain.Receipt{}, "", notSent(ctx, cfg.silent(cfg.askBound(), err))
	}
	busy := resumed.Thread.Status.Type == "active"
	var started struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"turn"`
	}
	input := []map[string]any{{"type": "text", "text": Envelope(cfg.From, msg.Text())}}
	err = cfg.silent(cfg.Timeout, c.Call(ctx, "turn/start", map[string]any{"threadId": id, "input": input}, &started))
	cfg.Log.Debug("codex turn/start", "thread", id, "turn", started.Turn.ID, "busy", busy, "err", err)
	var rpc *codexapp.RPCError
	switch {
	case errors.As(err, &rpc):
		return domain.Receipt{}, "", failed("%s; nothing was sent", rpc.Error())
	case err != nil && ctx.Err() == context.Canceled:
		return domain.Receipt{}, "", domain.Refuse(domain.ReasonOutcomeUnknown, "interrupted while Codex took turn/start (%v); the thread may or may not have the message: look before sending again", err)
	case err != nil:
		return domain.Receipt{}, "", domain.Refuse(domain.ReasonOutcomeUnknown, "%v; the thread may or may not have the message: look before sending again", err)
	case started.Turn.ID == "":
		return domain.Receipt{}, "", domain.Refuse(domain.ReasonOutcomeUnknown, "Codex answered turn/start with no turn id; the thread may or may not have the message: look before sending again")
	}
	turn := started.Turn.ID
	if onTurn != nil {
		onTurn(turn)
	}
	rec := domain.Receipt{Transport: AppServerName, MsgID: turn}
	if cfg.Window < 0 {
		rec.Outcome, rec.Detail = domain.OutcomePosted.String(), "turn "+turn+"; turn/started not awaited"
		return rec, turn, nil
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Window)
	defer cancel()
	for {
		select {
		case n, ok := <-notes:
			if !ok {
				rec.Outcome, rec.Detail = domain.OutcomePosted.String(), fmt.Sprintf("turn %s accepted; the connection ended before turn/started (%v)", turn, c.Err())
				return rec, turn, nil
			}
			switch n.Method {
			case "turn/started":
				if tid, tturn := turnOf(n.Params); tid == id && tturn == turn {
					rec.Outcome, rec.Detail = domain.OutcomeDelivered.String(), "turn/started: turn "+turn
					return rec, turn, nil
				}
			case "item/started", "item/completed":
				// A busy thread takes the text into its running turn: no
				// turn/started comes, the userMessage item does.
				if busy && userMessageIn(n.Params, id, turn) {
					rec.Outcome, rec.Detail = domain.OutcomeDelivered.String(), "the thread was busy: Codex took the message into its running turn "+turn+", which answers it (not a next turn)"
					return rec, turn, nil
				}
			case "turn/completed":
				if tid, tturn := turnOf(n.Params); tid == id && tturn == turn {
					if e := turnError(n.Params); e != "" {
						return rec, turn, failed("Codex ended turn %s with an error: %s", turn, e)
					}
					rec.Outcome, rec.Detail = domain.OutcomeDelivered.String(), "turn "+turn+" completed"
					return rec, turn, nil
				}
			}
		case <-wctx.Done():
			if ctx.Err() != nil {
				// Interrupted (Ctrl-C, SIGTERM) or out of time, not the
				// receipt window: Codex took the text, what it did with it
				// was not heard.
				return domain.Receipt{}, turn, domain.Refuse(domain.ReasonOutcomeUnknown, "interrupted after Codex accepted the message (turn/start named turn %s) and before it said a turn started (%v): look at the thread before sending again", turn, ctx.Err())
			}
			rec.Outcome = domain.OutcomePosted.String()
			rec.Detail = fmt.Sprintf("turn %s accepted (turn/start); no turn/started within %s", turn, cfg.Window)
			if busy {
				// Measured on 0.171.0: turn/start on a running turn answers
				// with that turn's id and Codex steers the text into it.
				rec.Detail += "; the thread was busy: Codex took the text into its running turn, which answers it (not a next turn)"
			}
			return rec, turn, nil
		}
	}
}

// turnOf reads a turn notification's threadId and turn.id.
func turnOf(params json.RawMessage) (thread, turn string) {
	var p struct {
		ThreadID string `json:"threadId"`
		Turn     struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(params, &p)
	return p.ThreadID, p.Turn.ID
}

// turnError is the message of a failed turn ("" when it did not fail).
func turnError(params json.RawMessage) string {
	var p struct {
		Turn struct {
			Status string `json:"status"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(params, &p)
	switch {
	case p.Turn.Error != nil && p.Turn.Error.Message != "":
		return oneLine(p.Turn.Error.Message)
	case p.Turn.Status == "failed":
		return "status failed"
	}
	return ""
}

// item is an item notification's fields peerctl reads.
type item struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
}

func userMessageIn(params json.RawMessage, thread, turn string) bool {
	var it item
	return json.Unmarshal(params, &it) == nil && it.ThreadID == thread && it.TurnID == turn && it.Item.Type == "userMessage"
}
