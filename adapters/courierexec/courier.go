// Package courierexec is the default transport: a one-shot headless Claude
// Code run (`claude -p`) restricted to the ListAgents and SendMessage tools,
// which finds the target by its exact name and relays the text verbatim.
//
// Hardening, each with a test:
//   - the prompt goes through stdin (no argv size limit, no flag injection),
//     and stdin is closed once written;
//   - the text is fenced by markers that carry a fresh 128-bit nonce the
//     text does not contain, and the prompt says the text ends only there;
//   - the child runs in a fresh private folder (os.MkdirTemp: mode 0700,
//     ours, removed after the run) and with --setting-sources user, so no
//     project or local settings (.claude/settings.json: apiKeyHelper, env)
//     planted in a shared folder such as /tmp are ever loaded;
//   - the child's environment is scrubbed of the calling session's identity
//     (CLAUDECODE, CLAUDE_CODE_* session variables), keeping CLAUDE_CONFIG_DIR;
//   - the child runs in its own process group; on time-out or cancel the
//     whole group gets SIGTERM, then SIGKILL after a grace period, and
//     exec.Cmd.WaitDelay keeps a grandchild holding the pipes from hanging us;
//   - a word is not proof: SENT counts only with exit 0, is_error false, a
//     result of exactly SENT, and a SendMessage tool call in the verbose
//     transcript whose "to" is the target's name and whose "message" equals
//     the text byte for byte, with a tool result that is not an error.
//
// Output format: `claude -p --output-format json --verbose` prints a JSON
// array of messages ending in a {"type":"result"} object (Claude Code
// 2.1.328; without --verbose a single result object). See
// docs/CLAUDE-CODE-FACTS.md.
package courierexec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/procgroup"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Name is this transport's name.
const Name = "courier"

// Defaults.
const (
	DefaultProgram = "claude"
	DefaultModel   = "haiku"
	DefaultTimeout = 30 * time.Second
	DefaultGrace   = 2 * time.Second
	// ProgramEnv names the environment variable that overrides the program.
	ProgramEnv = "PEERCTL_CLAUDE"
)

// Tools is the courier's whole tool set.
const Tools = "ListAgents,SendMessage"

// Config configures the courier. Zero fields take the defaults.
type Config struct {
	// Program is the claude executable (a path, or a name looked up on PATH).
	Program string
	// Model is passed to --model.
	Model string
	// Timeout bounds one run when the context has no earlier deadline.
	Timeout time.Duration
	// Grace is how long the process group has between SIGTERM and SIGKILL.
	Grace time.Duration
	// Dir is the child's working directory. Empty (the default) means a
	// fresh private folder per run, made with os.MkdirTemp (mode 0700, owned
	// by us) under os.TempDir() and removed when the run ends, time-outs
	// included. A Dir set here is used as is and never removed: it must not
	// be writable by anyone else, since Claude Code reads project files
	// there (CLAUDE.md, .mcp.json; .claude/settings*.json are not read
	// thanks to --setting-sources user).
	Dir string
	// Env is the environment to scrub and pass (default: os.Environ()).
	Env []string
	// ConfigDir, when set, is exported as CLAUDE_CONFIG_DIR so the courier's
	// ListAgents reads the same registry peerctl read.
	ConfigDir string
	// MaxOutput caps how much stdout is kept (default 16 MiB).
	MaxOutput int
}

// Transport runs the courier. Build it with New.
type Transport struct {
	cfg Config
}

var _ ports.Transport = (*Transport)(nil)

// New returns a courier transport with defaults filled in.
func New(cfg Config) *Transport {
	if cfg.Program == "" {
		cfg.Program = DefaultProgram
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
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
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = 16 << 20
	}
	return &Transport{cfg: cfg}
}

// Name returns "courier".
func (t *Transport) Name() string { return Name }

// SettingSources is the courier's --setting-sources value: user settings
// only, never the project's (.claude/settings.json) or local ones
// (.claude/settings.local.json) of its working directory, which may hold an
// apiKeyHelper command or env overrides (ANTHROPIC_BASE_URL). --safe-mode
// does not stop those. The flag is in `claude --help` of Claude Code
// 2.1.224, 2.1.328 and 2.1.332.
const SettingSources = "user"

// PrivateDirPattern is the os.MkdirTemp pattern of the courier's default
// working directory; a plan shows it under os.TempDir() as the folder a real
// run makes afresh.
const PrivateDirPattern = "peerctl-courier-*"

// Args returns the courier's argv after the program name: least privilege,
// no prompt (the prompt goes through stdin).
func (t *Transport) Args() []string {
	return []string{"-p", "--model", t.cfg.Model,
		"--tools", Tools, "--allowedTools", Tools,
		"--safe-mode", "--setting-sources", SettingSources, "--no-session-persistence",
		"--output-format", "json", "--verbose"}
}

// lookProgram finds Config.Program on PATH and makes it absolute: a relative
// path (from --claude or PEERCTL_CLAUDE) means relative to our working
// directory, not to the child's, where exec would otherwise resolve it.
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

// planDir is the working directory a plan shows: Config.Dir when set, else
// the pattern of the private folder a run makes.
func (t *Transport) planDir() string {
	if t.cfg.Dir != "" {
		return t.cfg.Dir
	}
	return filepath.Join(os.TempDir(), PrivateDirPattern)
}

// workDir returns the working directory of one child and a function that
// removes it: Config.Dir as is (nothing to remove), else a fresh private
// folder (os.MkdirTemp makes it 0700 and fails rather than reuse a name).
func (t *Transport) workDir() (string, func(), error) {
	if t.cfg.Dir != "" {
		return t.cfg.Dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", PrivateDirPattern)
	if err != nil {
		return "", nil, fmt.Errorf("make the courier's private folder: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// Plan describes the run: the program as Deliver would start it (resolved
// on PATH, made absolute), argv, working directory and the stdin prompt
// (with a nonce that a real run draws afresh). A program that cannot be
// found or is not executable is refused exactly as Deliver refuses it
// (ReasonDeliveryFailed, "cannot start the courier ..."), so a dry run fails
// where the real run would.
func (t *Transport) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := checkTarget(target); err != nil {
		return domain.Plan{}, err
	}
	program, err := t.program()
	if err != nil {
		return domain.Plan{}, err
	}
	nonce, err := Nonce(msg)
	if err != nil {
		return domain.Plan{}, err
	}
	return domain.Plan{Transport: Name, Program: program, Argv: append([]string{program}, t.Args()...),
		Dir: t.planDir(), Stdin: Prompt(target.Name(), msg, nonce)}, nil
}

// program resolves the configured program as a run starts it (see
// lookProgram). A program that cannot be found or is not executable is a
// *domain.Refusal with ReasonDeliveryFailed.
func (t *Transport) program() (string, error) {
	program, err := t.lookProgram()
	if err != nil {
		return "", &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err,
			Detail: fmt.Sprintf("cannot start the courier %q: %v (install Claude Code, or set --claude or %s)", t.cfg.Program, unwrapExec(err), ProgramEnv)}
	}
	return program, nil
}

func checkTarget(target domain.Session) error {
	if !target.Addressable() {
		return domain.Refuse(domain.ReasonNotAddressable, "session %s (pid %d): %s", target.ID(), target.PID(), target.Unaddressable())
	}
	if target.Record().BOM {
		// The courier's SendMessage can only pick among the sessions
		// Claude Code lists; it could take another of the same name.
		return domain.Refuse(domain.ReasonHarnessUnsupported,
			"session %s (pid %d): its record starts with a UTF-8 byte-order mark, which Claude Code's own listing drops, so the courier cannot reach it; use --transport socket", target.ID(), target.PID())
	}
	return nil
}

// Deliver runs one courier for msg to target and returns a receipt with
// outcome "sent" only on proof (see the package doc). Every failure is a
// *domain.Refusal with ReasonDeliveryFailed whose detail carries the exit
// code, the courier's report and the heads of stdout and stderr.
func (t *Transport) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := checkTarget(target); err != nil {
		return domain.Receipt{}, err
	}
	nonce, err := Nonce(msg)
	if err != nil {
		return domain.Receipt{}, err
	}
	run, err := t.run(ctx, Prompt(target.Name(), msg, nonce))
	if err != nil {
		return domain.Receipt{}, err
	}
	if err := Judge(run, target.Name(), msg.Text()); err != nil {
		return domain.Receipt{}, err
	}
	return domain.Receipt{Transport: Name, Outcome: "sent", Detail: "courier called SendMessage with the exact text and answered SENT"}, nil
}

// Run is what one courier process did.
type Run struct {
	ExitCode int // -1 when killed by a signal or never started
	Stdout   []byte
	Stderr   []byte
	TimedOut bool
	Canceled bool
	Elapsed  time.Duration
}

func (t *Transport) run(ctx context.Context, prompt string) (Run, error) {
	program, err := t.program()
	if err != nil {
		return Run{ExitCode: -1}, err
	}
	if err := ctx.Err(); err != nil {
		return Run{ExitCode: -1, Canceled: true}, domain.Refuse(domain.ReasonDeliveryFailed, "courier not started: %v", err)
	}
	dir, removeDir, err := t.workDir()
	if err != nil {
		return Run{ExitCode: -1}, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err,
			Detail: fmt.Sprintf("courier not started: %v", err)}
	}
	// Deferred first, so it runs last: after the group is ended and reaped.
	defer removeDir()
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()

	stdout := &capBuffer{max: t.cfg.MaxOutput}
	stderr := &capBuffer{max: 1 << 20}
	cmd := exec.Command(program, t.Args()...)
	cmd.Dir = dir
	cmd.Env = ScrubEnv(t.cfg.Env, t.cfg.ConfigDir)
	cmd.Stdin = strings.NewReader(prompt) // copied by exec, then the pipe is closed
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = t.cfg.Grace
	start := time.Now()
	group, err := procgroup.Start(cmd)
	if err != nil {
		return Run{ExitCode: -1}, &domain.Refusal{Reason: domain.ReasonDeliveryFailed, Err: err,
			Detail: fmt.Sprintf("cannot start the courier %s: %v", program, err)}
	}
	defer group.Close()
	done := make(chan error, 1)
	go func() {
		// Nothing outlives a call: once the courier has exited, whatever is
		// left of its group is killed, while the courier is still unreaped so
		// its pid, the group's id, cannot have been reused by anyone else.
		group.AwaitExit()
		group.Kill()
		done <- cmd.Wait()
	}()

	var waitErr error
	r := Run{}
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		r.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		r.Canceled = !r.TimedOut
		group.Terminate()
		select {
		case waitErr = <-done:
		case <-time.After(t.cfg.Grace):
			group.Kill()
			waitErr = <-done
		}
	}
	r.Elapsed = time.Since(start)
	r.Stdout, r.Stderr = stdout.Bytes(), stderr.Bytes()
	r.ExitCode = cmd.ProcessState.ExitCode()
	if r.TimedOut || r.Canceled {
		why := "was canceled"
		if r.TimedOut {
			why = fmt.Sprintf("timed out after %s", t.cfg.Timeout)
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 0 && r.Elapsed < t.cfg.Timeout {
				why = fmt.Sprintf("ran out of time after %s", r.Elapsed.Round(time.Millisecond))
			}
		}
		return r, domain.Refuse(domain.ReasonDeliveryFailed, "courier %s; its process group was ended; %s", why, r.heads())
	}
	_ = waitErr // exit status is judged from ProcessState
	return r, nil
}

func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// heads renders the first bytes of stdout and stderr for a failure detail.
func (r Run) heads() string {
	return fmt.Sprintf("stdout: %q; stderr: %q", head(r.Stdout, 200), head(r.Stderr, 800))
}

func head(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// NonceBytes is the nonce's size: 16 random bytes (128 bits), 32 hex digits.
const NonceBytes = 16

// Nonce draws a 128-bit random hex nonce that msg does not contain.
func Nonce(msg domain.Message) (string, error) { return drawNonce(rand.Read, msg) }

// drawNonce draws nonces from read until one does not occur in msg (at most
// 8 tries; a 64 KiB text holds far fewer than 2^128 of them).
func drawNonce(read func([]byte) (int, error), msg domain.Message) (string, error) {
	for range 8 {
		var b [NonceBytes]byte
		if _, err := read(b[:]); err != nil {
			return "", fmt.Errorf("draw nonce: %w", err)
		}
		n := hex.EncodeToString(b[:])
		if !msg.Contains(n) {
			return n, nil
		}
	}
	return "", errors.New("draw nonce: every nonce drawn occurs in the message")
}

// capBuffer keeps at most max bytes and discards the rest (still reporting
// the write as complete so the child never blocks on a full pipe).
type capBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capBuffer) Bytes() []byte { return c.buf.Bytes() }

// Config returns the transport's configuration, defaults filled in.
func (t *Transport) Config() Config { return t.cfg }
