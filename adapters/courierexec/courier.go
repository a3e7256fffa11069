// Package courierexec is the default transport: a headless Claude Code run
// (`claude -p`) restricted to the ListAgents and SendMessage tools whose
// "model" is peerctl's own loopback endpoint (endpoint.go). No model runs,
// no token is spent and no login is needed: the endpoint answers a send
// turn with exactly one SendMessage {"to": "uds:<target socket>",
// "message": <the text, byte-exact>, "summary": "peerctl"}, and Claude
// Code's own tool result ({success, message, msg_id}) is the receipt.
//
// A Courier is one long-lived process, `claude -p --input-format
// stream-json --output-format stream-json --verbose`, alive while its stdin
// is open (Claude Code 2.1.328 and 2.1.332): each Send writes one user turn
// and waits for that turn's tool result; turns the courier gets on its own
// (a "[Cross-session delivery notice]" about a message it sent, a peer's
// <cross-session-message> reply) come out of Inbound. Transport.Deliver is
// the one-shot use: start, one Send, hear notices through a window, close.
//
// Hardening, each with a test:
//   - the text never passes through a prompt or a model: the endpoint puts
//     it, byte-exact, into the one tool call; the turn written to stdin is
//     a random token only;
//   - the endpoint listens on 127.0.0.1 only, with a fresh key per run;
//     a request without it gets 401 and is counted; bodies are bounded;
//   - the child runs in a fresh private folder (os.MkdirTemp: 0700, ours,
//     removed after the run) holding its working directory and its own
//     empty CLAUDE_CONFIG_DIR (no user settings, hooks, MCP servers,
//     plugins or credentials), with --setting-sources user, --safe-mode and
//     --strict-mcp-config;
//   - the environment is scrubbed of the calling session (CLAUDECODE,
//     CLAUDE_CODE_*), of every ANTHROPIC_* setting and proxy, and of
//     provider switches, so the run talks to the endpoint alone;
//   - the child runs in its own process group; on time-out, cancel or
//     Close the whole group gets SIGTERM, then SIGKILL after a grace
//     period, and once the courier exits whatever is left of its group is
//     killed (adapters/procgroup; a Job Object on Windows, where
//     time-out and cancel end the job at once); the group also ends when
//     peerctl dies without ending it (kill -9): its guard kills it.
package courierexec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/domain"
)

// Name is this transport's name.
const Name = "courier"

// Defaults.
const (
	DefaultProgram = "claude"
	DefaultName    = "peerctl"
	DefaultTimeout = 30 * time.Second
	DefaultGrace   = 2 * time.Second
	// ProgramEnv names the environment variable that overrides the program.
	ProgramEnv = "PEERCTL_CLAUDE"
)

// Tools is the courier's whole tool set.
const Tools = "ListAgents,SendMessage"

// SettingSources is the courier's --setting-sources value: user settings
// only — and the user's config dir is the courier's own empty one — never
// the project's or local ones of its working directory. The flag is in
// `claude --help` of Claude Code 2.1.224, 2.1.328 and 2.1.332.
const SettingSources = "user"

// PrivateDirPattern is the shape of the courier's private folder's name in
// the temporary folder, "peerctl-courier-<pid>-<random>" where pid is
// peerctl's (its working directory "work" and config dir "config" inside).
// A folder whose peerctl was killed before it could remove it (kill -9) is
// removed by the next courier's start (sweepOrphans).
const PrivateDirPattern = privateDirPrefix + "<pid>-*"

const privateDirPrefix = "peerctl-courier-"

// Config configures the courier. Zero fields take the defaults.
type Config struct {
	// Program is the claude executable (a path, or a name looked up on PATH).
	Program string
	// Name is the courier's display name (`claude -n`): receivers see it as
	// from-name. Default DefaultName.
	Name string
	// Timeout bounds one Deliver when the context has no earlier deadline.
	Timeout time.Duration
	// Grace is how long the process group has between SIGTERM and SIGKILL,
	// and how long Close waits for an exit after closing stdin.
	Grace time.Duration
	// Env is the environment to scrub and pass (default: os.Environ()).
	Env []string
	// NoticeWindow is how long Deliver keeps the courier open after a send,
	// to hear a held or refused notice (default DefaultNoticeWindow); app
	// shortens it to the transcript confirmation (see DeliverHeeding).
	NoticeWindow time.Duration
	// MaxOutput caps how much of the courier's stdout is kept (default 1 MiB).
	MaxOutput int
	// Log hears the courier's start (argv, its endpoint) and exit (status,
	// how long it ran) at debug level; nil: nothing is logged.
	Log *slog.Logger
}

// Transport runs couriers. Build it with New.
type Transport struct {
	cfg Config
}

// New returns a courier transport with defaults filled in.
func New(cfg Config) *Transport {
	if cfg.Program == "" {
		cfg.Program = DefaultProgram
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.NoticeWindow <= 0 {
		cfg.NoticeWindow = DefaultNoticeWindow
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 1 << 20
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Transport{cfg: cfg}
}

// Name returns "courier".
func (t *Transport) Name() string { return Name }

// Starts names the program each send starts (ports.Starting).
func (t *Transport) Starts() string { return "claude -p" }

// Config returns the transport's configuration, defaults filled in.
func (t *Transport) Config() Config { return t.cfg }

// Args returns the courier's argv after the program name.
func (t *Transport) Args() []string {
	return []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--tools", Tools, "--allowedTools", Tools,
		"--safe-mode", "--setting-sources", SettingSources, "--strict-mcp-config", "--no-session-persistence",
		"-n", t.cfg.Name}
}

// lookProgram finds Config.Program on PATH and makes it absolute: a relative
// path (from --claude or PEERCTL_CLAUDE) means relative to our working
// directory, not to the child's.
func (t *Transport) lookProgram() (string, error) {
	program, err := exec.LookPath(t.cfg.Program)
	if err != nil {
		return "", err
	}
	if abs, aerr := filepath.Abs(program); aerr == nil {
		program = abs
	}
	return program, nil
}

// program resolves the configured program as a run starts it. A program
// that cannot be found or is not executable is a *domain.Refusal with
// ReasonDeliveryFailed.
func (t *Transport) program() (string, error) {
	program, err := t.lookProgram()
	if err != nil {
		return "", &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err,
			Detail: fmt.Sprintf("cannot start the courier %q: %v (install Claude Code, or set --claude or %s; a one-shot send --transport socket needs no claude)", t.cfg.Program, unwrapExec(err), ProgramEnv)}
	}
	return program, nil
}

// privateDir makes the courier's private folder (0700, ours) with its
// working directory and config dir inside, and a function that removes it.
func privateDir() (root string, remove func(), err error) {
	sweepOrphans(os.TempDir())
	root, err = os.MkdirTemp("", fmt.Sprintf("%s%d-*", privateDirPrefix, os.Getpid()))
	if err != nil {
		return "", nil, fmt.Errorf("make the courier's private folder: %w", err)
	}
	remove = func() { _ = os.RemoveAll(root) }
	for _, sub := range []string{"work", "config"} {
		if err := os.Mkdir(filepath.Join(root, sub), 0o700); err != nil {
			remove()
			return "", nil, fmt.Errorf("make the courier's private folder: %w", err)
		}
	}
	return root, remove, nil
}

// Courier is one running courier: a `claude -p` stream-json process and
// its loopback endpoint. Start one with Transport.Start; end it with Close.
// Send may be called many times (one at a time; calls are serialized);
// Inbound delivers the turns the courier gets on its own.
type Courier struct {
	cfg     Config
	ep      *endpoint
	inbound <-chan Inbound
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	group   *procgroup.Group
	exited  chan struct{} // closed once the process is reaped
	stdout  *procgroup.Output
	stderr  *procgroup.Output
	started time.Time
	remove  func()

	sendMu    sync.Mutex
	closeOnce sync.Once
	closeErr  error
	stopWatch context.CancelFunc

	killMu sync.Mutex
	killed string // why the group was ended ("" when it exited on its own)
}

// SendResult is Claude Code's SendMessage tool result for one send.
type SendResult struct {
	// Success is the result's "success".
	Success bool
	// MsgID is its "msg_id" (a UUID on 2.1.328/2.1.332; "" when absent).
	MsgID string
	// Message is its "message", Claude Code's own words; for a result that
	// is not that JSON (a tool error) the whole result text.
	Message string
	// ToolError is the tool_result's is_error.
	ToolError bool
	// Raw is the tool result's text as Claude Code sent it.
	Raw string
	// Elapsed is how long the send took, from writing the turn to reading the result.
	Elapsed time.Duration
}

// Start starts a courier: the endpoint, the private folder, then the
// process. ctx bounds the courier's whole life: when it ends, the process
// group is ended as by Close. Failures are *domain.Refusal values with
// ReasonDeliveryFailed.
func (t *Transport) Start(ctx context.Context) (*Courier, error) {
	program, err := t.program()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, domain.Refuse(domain.ReasonDeliveryFailed, "courier not started: %v", err)
	}
	ep, err := newEndpoint()
	if err != nil {
		return nil, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err, Detail: "courier not started: " + err.Error()}
	}
	root, remove, err := privateDir()
	if err != nil {
		ep.close()
		return nil, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err, Detail: "courier not started: " + err.Error()}
	}
	c := &Courier{cfg: t.cfg, ep: ep, inbound: ep.inbound, exited: make(chan struct{}), remove: remove,
		stdout: &procgroup.Output{Max: t.cfg.MaxOutput}, stderr: &procgroup.Output{Max: 64 << 10}}
	cmd := exec.Command(program, t.Args()...)
	cmd.Dir = filepath.Join(root, "work")
	cmd.Env = CourierEnv(t.cfg.Env, filepath.Join(root, "config"), ep.url, ep.key)
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		ep.close()
		remove()
		return nil, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err, Detail: "courier not started: " + err.Error()}
	}
	cmd.WaitDelay = t.cfg.Grace
	c.cmd, c.stdin, c.started = cmd, stdin, time.Now()
	if c.group, err = procgroup.Start(cmd); err != nil {
		ep.close()
		remove()
		return nil, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err,
			Detail: fmt.Sprintf("cannot start the courier %s: %v", program, err)}
	}
	log := t.cfg.Log.With("pid", cmd.Process.Pid)
	log.Debug("courier started", "argv", append([]string{program}, t.Args()...), "endpoint", ep.url)
	go func() {
		// Nothing outlives the courier: once it has exited, whatever is left
		// of its group is killed, before Close, so the group's id cannot
		// have been reused by anyone else (see procgroup).
		c.group.AwaitExit()
		c.group.Kill()
		_ = cmd.Wait()
		c.group.Close()
		log.Debug("courier exited", "status", cmd.ProcessState.String(), "ran", time.Since(c.started).Round(time.Millisecond))
		close(c.exited)
	}()
	wctx, stop := context.WithCancel(ctx)
	c.stopWatch = stop
	go func() {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				c.end(fmt.Sprintf("its context ended (%v)", ctx.Err()))
			}
		case <-c.exited:
		}
	}()
	return c, nil
}

// Started is when the process was started.
func (c *Courier) Started() time.Time { return c.started }

// Inbound returns the turns the courier got on its own, in order; the
// channel is closed by Close. At most InboundBuffer wait unread; later ones
// are dropped (see Stats).
func (c *Courier) Inbound() <-chan Inbound { return c.inbound }

// Stats counts what the endpoint saw.
type Stats struct {
	// Requests is every HTTP request; Unauthorized those refused for a
	// wrong or missing key; Dropped the Inbound turns no one read in time.
	Requests, Unauthorized, Dropped int64
}

// Stats returns the endpoint's counters so far.
func (c *Courier) Stats() Stats {
	return Stats{Requests: c.ep.requests.Load(), Unauthorized: c.ep.unauthorized.Load(), Dropped: c.ep.dropped.Load()}
}

// Send delivers text to the session whose inbox socket is socket: it
// writes one user turn (a random token, nothing else) to the courier's
// stdin, the endpoint answers that turn with one SendMessage to
// "uds:"+socket carrying text, and Send returns Claude Code's tool result.
// socket must be an absolute path and text a validated domain.Message's
// text. An error is a *domain.Refusal with ReasonDeliveryFailed; when
// Claude Code answered (SendResult.Success false, a tool error) the result
// is returned beside it, and the detail quotes Claude Code's words (the
// courier stays usable, as it does after an exchange that went wrong at the
// endpoint: SendMessage not offered, an unexpected request). When ctx ends
// before the turn does, the courier's process group is ended and later
// Sends fail; the refusal is ReasonOutcomeUnknown when the endpoint had
// already handed the text to Claude Code, ReasonDeliveryFailed when not.
func (c *Courier) Send(ctx context.Context, socket, text string) (SendResult, error) {
	if !filepath.IsAbs(socket) {
		return SendResult{}, domain.Refuse(domain.ReasonNotAddressable, "socket path %q is not absolute", socket)
	}
	t := &turn{to: "uds:" + socket, text: text, done: make(chan turnEnd, 1)}
	end, elapsed, err := c.exchange(ctx, t)
	if err != nil {
		return SendResult{}, err
	}
	res := end.result
	res.Elapsed = elapsed
	switch {
	case res.ToolError && strings.Contains(res.Message, "not available"):
		// 2.1.224: "Cross-session messaging is not available in this session."
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "Claude Code's SendMessage failed: %s; sending to a session's socket (uds:) needs a Claude Code that has it, %s or newer (peerctl doctor shows the installed version)", quoteWords(res.Message), udsVersion)
	case res.ToolError:
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "Claude Code's SendMessage failed: %s", quoteWords(res.Message))
	case !res.Success:
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "Claude Code's SendMessage answered success:false: %s", quoteWords(res.Message))
	case res.MsgID == "":
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "Claude Code's SendMessage result carries no msg_id: %s", quoteWords(res.Raw))
	}
	return res, nil
}

// Ping runs one turn that sends nothing and returns the tools the courier's
// request offered and how long the turn took from the courier's start
// (for `peerctl doctor`).
func (c *Courier) Ping(ctx context.Context) (tools []string, sinceStart time.Duration, err error) {
	t := &turn{ping: true, done: make(chan turnEnd, 1)}
	end, _, err := c.exchange(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	return end.tools, time.Since(c.started), nil
}

// exchange runs one turn t: token and tool id drawn, turn registered with
// the endpoint, the user line written, then the wait for the endpoint's
// end of the turn, the process's exit or ctx. A send turn that ends
// without Claude Code's tool result fails as delivery_failed when the
// endpoint had not yet answered it with the SendMessage call (nothing was
// sent), and as outcome_unknown once it had: Claude Code may have posted
// the text before the turn broke off (see failure).
func (c *Courier) exchange(ctx context.Context, t *turn) (turnEnd, time.Duration, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	t.token = "peerctl-turn-" + mustHex(16)
	t.toolID = "toolu_peerctl_" + mustHex(12)
	select {
	case <-c.exited:
		return turnEnd{}, 0, c.failure(t, "the courier had already ended")
	default:
	}
	c.ep.begin(t)
	defer c.ep.abandon(t)
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": t.token}})
	start := time.Now()
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		// A courier that no longer reads its input can take no turn: end it
		// (its whole group) so that it is Done when this send returns, and
		// a relay starts a new one instead of sending on this one again.
		c.end("it stopped reading its input")
		return turnEnd{}, 0, c.failure(t, fmt.Sprintf("cannot write the turn to the courier: %v", err))
	}
	finish := func(end turnEnd) (turnEnd, time.Duration, error) {
		if end.err != nil {
			return end, 0, c.failure(t, end.err.Error())
		}
		return end, time.Since(start), nil
	}
	select {
	case end := <-t.done:
		return finish(end)
	case <-c.exited:
		// The endpoint may have finished the turn just before the exit.
		select {
		case end := <-t.done:
			return finish(end)
		default:
		}
		return turnEnd{}, 0, c.failure(t, "the courier exited before the turn ended")
	case <-ctx.Done():
		// A turn that ended as ctx did is the turn's end, not a cancel.
		select {
		case end := <-t.done:
			return finish(end)
		default:
		}
		why, short := "was canceled", "interrupted"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why, short = fmt.Sprintf("ran out of time after %s", time.Since(c.started).Round(time.Millisecond)), shortTimedOut
		}
		c.end("its turn " + why)
		select {
		case end := <-t.done: // the result came while the group was ended
			return finish(end)
		default:
		}
		return turnEnd{}, 0, c.failureAs(t, "courier "+why, short)
	}
}

// failure is the refusal of a turn t that ended without its tool result,
// saying what and what the courier showed: its exit code when it ended,
// the unexpected requests the endpoint saw, and the heads of its stdout
// and stderr. Its reason is outcome_unknown for a send turn the endpoint
// had answered with its SendMessage call (the text was handed over to
// Claude Code, which may have posted it), delivery_failed otherwise
// (nothing was sent).
func (c *Courier) failure(t *turn, what string) error { return c.failureAs(t, what, "") }

// failureAs is failure with short, what a person reads first
// (shortTimedOut, "interrupted"), made the refusal's Short with whether the
// text was handed over: the exit code, the endpoint's requests and the
// courier's stderr of a turn that ran out of time or was interrupted say
// nothing to a person, and stay in Detail for --debug and --json. A ping
// turn (doctor's probe) has no Short.
// shortTimedOut starts the Short of a turn that ran out of time.
const shortTimedOut = "timed out"

func (c *Courier) failureAs(t *turn, what, short string) error {
	reason, tail, shortTail := domain.ReasonDeliveryFailed, "", ""
	if !t.ping {
		tail = "; nothing was sent: the courier had not been given the text"
		shortTail = " before the message was handed over: nothing was sent"
		if c.ep.handedOver(t) {
			reason = domain.ReasonOutcomeUnknown
			tail = "; the courier had been given the text (its SendMessage call), so the session may or may not have it: look before sending again"
			shortTail = " after the message was handed over: the session may or may not have it; look before sending again"
		}
	}
	var parts []string
	select {
	case <-c.exited:
		parts = append(parts, fmt.Sprintf("exit code %d", c.cmd.ProcessState.ExitCode()))
		c.killMu.Lock()
		if c.killed != "" {
			parts = append(parts, "its process group was ended: "+c.killed)
		}
		c.killMu.Unlock()
	default:
	}
	c.ep.mu.Lock()
	parts = append(parts, fmt.Sprintf("the endpoint saw %d request(s)", c.ep.requests.Load()))
	if len(c.ep.seen) > 0 {
		parts = append(parts, "unexpected requests: "+strings.Join(c.ep.seen, "; "))
	}
	if c.ep.other != "" {
		parts = append(parts, fmt.Sprintf("the last request outside a turn said %q", c.ep.other))
	}
	c.ep.mu.Unlock()
	if n := c.ep.unauthorized.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d request(s) without the run's key refused", n))
	}
	if r := resultLine(c.stdout.Bytes()); r != "" {
		parts = append(parts, "its result: "+r)
	}
	parts = append(parts, fmt.Sprintf("stderr: %q", head(c.stderr.Bytes(), 800)))
	r := domain.Refuse(reason, "%s%s; %s", what, tail, strings.Join(parts, "; "))
	if short != "" && !t.ping {
		r.Short = short + shortTail
	}
	return r
}

// resultLine returns the "result" of the last stream-json result message on
// stdout (Claude Code's words when a run ends in an error, e.g. "Not logged
// in · Please run /login"), or the head of stdout when there is none.
func resultLine(out []byte) string {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m struct {
			Type   string `json:"type"`
			Result string `json:"result"`
			Errors []any  `json:"errors"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "result" {
			last = m.Result
			if last == "" && len(m.Errors) > 0 {
				last = fmt.Sprint(m.Errors...)
			}
		}
	}
	if last == "" && !bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) {
		return head(out, 200)
	}
	return clip(last, 400)
}

// Close ends the courier: stdin is closed (the run ends its turn and
// exits), and a process still running after Grace has its group ended
// (SIGTERM, then SIGKILL after Grace). The endpoint is shut, Inbound
// closed and the private folder removed. Close waits for all that, is safe
// to call more than once, and returns nil unless the group had to be killed.
func (c *Courier) Close() error {
	c.closeOnce.Do(func() {
		_ = c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(c.cfg.Grace):
			c.end("it did not exit within " + c.cfg.Grace.String() + " of its stdin closing")
			c.closeErr = fmt.Errorf("courier did not exit within %s of its stdin closing; its process group was ended", c.cfg.Grace)
		}
		c.stopWatch()
		c.ep.close()
		c.remove()
	})
	return c.closeErr
}

// end ends the process group (SIGTERM, then SIGKILL after Grace) and waits
// for the courier to be reaped.
func (c *Courier) end(why string) {
	select {
	case <-c.exited:
		return
	default:
	}
	c.killMu.Lock()
	if c.killed == "" {
		c.killed = why
	}
	c.killMu.Unlock()
	c.group.Terminate()
	select {
	case <-c.exited:
	case <-time.After(c.cfg.Grace):
		c.group.Kill()
		<-c.exited
	}
}

// Done is closed once the courier process has exited and been reaped.
func (c *Courier) Done() <-chan struct{} { return c.exited }

// Output returns what the courier printed so far (stream-json on stdout,
// capped at Config.MaxOutput; stderr capped at 64 KiB).
func (c *Courier) Output() (stdout, stderr []byte) { return c.stdout.Bytes(), c.stderr.Bytes() }

func quoteWords(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no words)"
	}
	return fmt.Sprintf("%q", clip(s, 800))
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

func head(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
