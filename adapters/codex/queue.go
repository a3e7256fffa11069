package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// QueueName is the queue transport's name.
const QueueName = "queue"

// ProgramEnv names the codex program when --codex is not given.
const ProgramEnv = "PEERCTL_CODEX"

// DefaultProgram is the codex program run when none is picked (on PATH).
const DefaultProgram = "codex"

// maxOutput bounds what is kept of codex queue's output (bytes).
const maxOutput = 64 << 10

// Queue delivers with `codex queue --thread <id> --message <envelope>`
// (Codex 0.171.0), run without a shell, with CODEX_HOME set to the home,
// in its own process group that ends with the call. Exit 0 and "Queued
// message <uuid> for thread <id>." is the receipt: outcome queued, saying
// when the text runs (when). The queue is durable: a thread no client has
// open gets it when resumed; a busy thread runs it as its next turn; a
// thread the daemon holds with no client is refused (check). codex queue
// reaches a --no-daemon TUI whether or not a daemon runs: with none it
// serves the call itself and writes the home's queue_1.sqlite, which the
// TUI reads (docs/CODEX.md). codex queue takes the text only as
// an argument (--message), so it is visible in the process list
// (ps, /proc/<pid>/cmdline) while codex queue runs: use the app-server
// transport for a text others on the machine must not see.
type Queue struct{ cfg Config }

var _ ports.DurableTransport = (*Queue)(nil)

// NewQueue builds the transport.
func NewQueue(cfg Config) *Queue { return &Queue{cfg: cfg.withDefaults()} }

// Durable marks the queue durable (ports.DurableTransport): a thread the
// Codex home knows but no client has open now can be sent to.
func (q *Queue) Durable() {}

// Name returns "queue".
func (q *Queue) Name() string { return QueueName }

func (q *Queue) program() string {
	if q.cfg.Program != "" {
		return q.cfg.Program
	}
	return DefaultProgram
}

// Args is the argv after the program.
func (q *Queue) Args(target domain.Session, msg domain.Message) []string {
	return []string{"queue", "--thread", target.ID(), "--message", Envelope(q.cfg.From, msg.Text())}
}

// Plan shows the command Deliver would run.
func (q *Queue) Plan(target domain.Session, msg domain.Message) (domain.Plan, error) {
	if err := q.check(target); err != nil {
		return domain.Plan{}, err
	}
	path, err := presence.Find(q.program())
	if err != nil {
		return domain.Plan{}, failed("%v (pass --codex or set $%s)", err, ProgramEnv)
	}
	return domain.Plan{Transport: QueueName, Program: path, Argv: append([]string{path}, q.Args(target, msg)...)}, nil
}

// queuedLine is codex queue's confirmation line (the message and thread ids).
// Compiled on first use, not in the package initialisation every command runs.
var queuedLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`Queued message ([0-9a-fA-F-]{36}) for thread ([0-9a-fA-F-]{36})\.`)
})

// check refuses what the queue cannot serve (see check), and a thread in
// the daemon's afterglow: one no client has open (the session is dormant)
// that the daemon still holds loaded (Known gave it the daemon's status:
// idle or busy, where a thread the daemon let go has none). Codex runs a
// text queued for such a thread at once, in the daemon, with no one
// watching (measured on 0.171.0: 0.15 s after the send), and each such
// turn keeps the daemon holding the thread longer; so it is refused, with
// what to do instead.
func (q *Queue) check(target domain.Session) error {
	if err := check(q.cfg, target, QueueName); err != nil {
		return err
	}
	if target.Dormant() && target.Status() != domain.StatusUnknown {
		r := domain.Refuse(domain.ReasonNotLive, "%s", afterglow(target.ID()))
		r.Short = afterglowShort(target.ID())
		return r
	}
	return nil
}

// afterglowShort is afterglow for a person's one line (the refusal's
// Short): what happened, in one sentence, and what to do.
func afterglowShort(id string) string {
	return fmt.Sprintf("Codex thread %s was just closed and its daemon would run a message now with no one watching, so nothing was sent; open it (codex resume %s) and send, or in a minute send with --transport queue, which keeps it for the next resume", id, id)
}

// afterglow says why a thread the daemon holds loaded with no client is
// not sent to, and what to do: the whole story, for --json's detail and
// --debug (afterglowShort is its one line).
func afterglow(id string) string {
	return fmt.Sprintf("thread %s is loaded by Codex's app-server daemon but no client is known to have it open (its TUI quit, and the daemon keeps a thread about a minute after; or which client has it cannot be told); a queued message would run now, in the daemon, with no one watching, so nothing was sent: open it (codex resume %s) and send, or send again with --transport queue once the daemon let it go (about a minute), when the message waits for the next codex resume", id, id)
}

// when says, for a receipt, when the text Codex queued for target runs,
// as measured on 0.171.0 for each state: a thread no client has open
// runs it when resumed, a busy one as its next turn (after the running
// turn), an idle one at once, as a new turn its TUI shows.
func when(target domain.Session) string {
	switch {
	case target.Dormant():
		return "no client has the thread open now, so it runs when the thread is resumed (codex resume " + target.ID() + ")"
	case target.Status() == domain.StatusBusy:
		return "the thread was busy: it runs as its next turn, after the running one, in the TUI that has it open"
	case target.Status() == domain.StatusIdle:
		return "the thread was idle: it runs now, as a new turn the TUI that has it open shows"
	}
	// A --no-daemon thread: its status is not published outside the TUI.
	return "it runs now if the thread is idle, as its next turn if busy, in the TUI that has it open"
}

// Deliver runs codex queue (see Queue). While a daemon serves the home,
// codex queue hands the message to it; one that takes connections and
// does not answer (stopped: SIGSTOP) makes codex queue wait about 10 s
// and fail (measured on 0.171.0, with strace: only the WebSocket upgrade
// was written, never the message). So the daemon is asked first, as the
// app-server transport asks it (the handshake, bounded by DefaultAsk):
// one that does not answer is delivery_failed naming it, and codex queue
// is not run.
func (q *Queue) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := q.check(target); err != nil {
		return domain.Receipt{}, err
	}
	path, err := presence.Find(q.program())
	if err != nil {
		return domain.Receipt{}, failed("%v (pass --codex or set $%s); nothing was sent", err, ProgramEnv)
	}
	if err := q.daemonAnswers(ctx); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, q.cfg.Timeout)
	defer cancel()
	cmd := exec.Command(path, q.Args(target, msg)...)
	cmd.WaitDelay = 2 * time.Second
	env := q.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(withoutVar(env, "CODEX_HOME"), "CODEX_HOME="+q.cfg.Home, "NO_COLOR=1")
	out := &procgroup.Output{Max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err = procgroup.Run(ctx, cmd)
	text := strings.TrimSpace(string(out.Bytes()))
	q.cfg.Log.Debug("codex queue", "program", path, "thread", target.ID(), "err", err)
	if err != nil {
		if ctx.Err() == context.Canceled {
			return domain.Receipt{}, domain.Refuse(domain.ReasonOutcomeUnknown, "interrupted while codex queue ran (%v); the message may or may not be queued: look before sending again", err)
		}
		if ctx.Err() != nil {
			return domain.Receipt{}, domain.Refuse(domain.ReasonOutcomeUnknown, "codex queue did not finish within %s (%v); the message may or may not be queued: look before sending again", q.cfg.Timeout, err)
		}
		return domain.Receipt{}, failed("codex queue failed (%v): %s", err, codexSaid(text))
	}
	m := queuedLine().FindStringSubmatch(text)
	if m == nil || !strings.EqualFold(m[2], target.ID()) {
		return domain.Receipt{}, domain.Refuse(domain.ReasonOutcomeUnknown, "codex queue exited 0 without saying it queued the message for thread %s: %s", target.ID(), codexSaid(text))
	}
	return domain.Receipt{Transport: QueueName, Outcome: domain.OutcomeQueued.String(), MsgID: m[1],
		Detail: fmt.Sprintf("Codex queued message %s for thread %s (durable): %s", m[1], target.ID(), when(target))}, nil
}

func withoutVar(env []string, key string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// daemonAnswers asks the home's daemon, when a control socket says one
// serves it, for the handshake (openDaemon's bound and memo): nil when it
// answers, or when none runs (no socket, or nothing listens on it: codex
// queue then writes the queue file itself); a daemon that does not
// answer is delivery_failed naming it. Other trouble is left to codex
// queue to meet and say.
func (q *Queue) daemonAnswers(ctx context.Context) error {
	if _, err := codexapp.Socket(q.cfg.Home, getuid(), q.cfg.dirs...); err != nil {
		return nil
	}
	c, err := openDaemon(ctx, q.cfg)
	switch {
	case err == nil:
		return c.Close()
	case ctx.Err() != nil:
		return notSent(ctx, err)
	case errors.Is(err, context.DeadlineExceeded):
		return failed("%v; codex queue would wait for it and fail, so it was not run; nothing was sent", err)
	}
	return nil
}

// codexSaid is what a codex command's output says, for a reason: one
// line, bounded. A Rust error report ("Error: …", its "Caused by:" list,
// then "Stack backtrace:" and numbered frames, "   7: <unknown>") is
// kept to its error and causes; other output to its last three lines,
// never a backtrace's frames.
func codexSaid(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		if t := strings.TrimSpace(l); t == "Stack backtrace:" || strings.HasPrefix(t, "stack backtrace:") {
			lines = lines[:i]
			break
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "Error: ") {
			lines = lines[i:]
			break
		}
	}
	var kept []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		return "(no output)"
	}
	if len(kept) > 3 && !strings.HasPrefix(kept[0], "Error: ") {
		kept = kept[len(kept)-3:]
	}
	return oneLine(strings.Join(kept, " / "))
}
