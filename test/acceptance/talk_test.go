package acceptance

// A send that waits (--wait, --await-reply) tells its receipt the moment
// the hand-over is known, then that it waits: tests of order, never of
// time. Each wait here can only end by something the test does after it
// read the receipt, so a receipt printed at the end would never be read
// in time and the test fails.

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// running is a peerctl run whose output is read line by line as it comes.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr *lines
	done           chan struct{}
}

// lines collects a stream's lines and hands them out in order.
type lines struct {
	mu   sync.Mutex
	all  []string
	next int
	more chan struct{} // a token when a line came
	end  chan struct{} // closed at EOF
}

func readLines(r io.Reader) *lines {
	l := &lines{more: make(chan struct{}, 1), end: make(chan struct{})}
	go func() {
		defer close(l.end)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// until returns the first line not yet handed out that has want, skipping
// the others; the test fails when the stream ends or bound passes first.
func (l *lines) until(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(2 * bound)
	for {
		l.mu.Lock()
		for l.next < len(l.all) {
			line := l.all[l.next]
			l.next++
			if strings.Contains(line, want) {
				l.mu.Unlock()
				return line
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-l.end:
			l.mu.Lock()
			left := l.next < len(l.all)
			l.mu.Unlock()
			if !left {
				t.Fatalf("no line with %q: the stream ended: %q", want, l.text())
			}
		case <-deadline:
			t.Fatalf("no line with %q within %s: %q", want, 2*bound, l.text())
		}
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

func startTalking(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(peerctlBin(t), args...)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	errs, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	r := &running{cmd: cmd, stdout: readLines(out), stderr: readLines(errs), done: make(chan struct{})}
	go func() {
		<-r.stdout.end
		<-r.stderr.end
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-r.done:
		case <-time.After(bound):
			t.Errorf("peerctl's output did not end within %s of its kill", bound)
		}
	})
	return r
}

// exit waits for the run's end and returns its exit code.
func (r *running) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(2 * bound):
		t.Fatalf("peerctl did not end within %s; stdout %q, stderr %q", 2*bound, r.stdout.text(), r.stderr.text())
		return -1
	}
}

// --wait: the receipt on stdout, then on stderr that it waits and, once,
// that the target waits on a dialog; the wait ends when the session does,
// which the test makes happen only after both were read.
func TestSendWaitTellsTheReceiptFirst(t *testing.T) {
	cfg := t.TempDir()
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	r := startTalking(t, configEnv(t, cfg), "send", "--transport", "socket", "--wait=10m", "quiet", "go")
	// The transport's word at the hand-over; the transcript's confirmation
	// follows, within the wait.
	assert.Regexp(t, `^posted: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+\)`, r.stdout.until(t, "quiet"))
	head := r.stderr.until(t, "waiting")
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for the turn on the message to end; Ctrl-C stops the wait, not the message, which was handed over$`, head)
	assert.Regexp(t, `^peerctl: confirmed: its transcript shows the text in the session's queue \(seen in `, r.stderr.until(t, "confirmed"))

	f.say(t, "waiting dialog open")
	assert.Equal(t, `peerctl: note: "quiet" is waiting (dialog open): it waits on its user and takes nothing up until someone answers it there`,
		r.stderr.until(t, "dialog open"))
	f.say(t, "waiting dialog open") // rewritten, still the same dialog: said once
	f.stop(t)

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Regexp(t, `(?m)^wait: exited: the session ended`, r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stdout.text(), `posted: "quiet"`), "the receipt is printed once: %s", r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stderr.text(), "dialog open"), "said once: %s", r.stderr.text())
	assert.NotContains(t, r.stderr.text(), "\r", "stderr is no terminal: nothing is rewritten in place")
}

// --await-reply: the receipt on stderr (stdout is the reply's), then that
// it waits for the reply; the session answers only once both were read.
func TestSendAwaitReplyTellsTheReceiptFirst(t *testing.T) {
	w, release := newHeldReplyWorld(t)
	r := startTalking(t, w.env(t, "sent"), "--config-dir", w.config, "send", "--await-reply=10m", "--no-confirm", w.id, "ping")
	assert.Regexp(t, `^queued: "inbox"`, r.stderr.until(t, "inbox"))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for "inbox" to reply; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))
	release()

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Equal(t, "pong: ping", r.stdout.text(), "stdout is the reply and nothing else")
	assert.Equal(t, 1, strings.Count(r.stderr.text(), `queued: "inbox"`), "the receipt is printed once: %s", r.stderr.text())
}

// With --json the receipt is one document at the end, as before, and
// nothing is said on stderr while it waits.
func TestSendWaitJSONSaysNothingMeanwhile(t *testing.T) {
	cfg := t.TempDir()
	startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "send", "--transport", "socket", "--json", "--wait=300ms", "quiet", "go")
	require.Equal(t, 11, r.Code, "stderr: %s", r.Stderr)
	assert.NotContains(t, string(r.Stderr), "waiting up to")
	assert.True(t, strings.HasPrefix(string(r.Stdout), "{"), "one JSON document: %s", r.Stdout)
}

// A send that waits and confirms: at the hand-over its receipt reads
// "handed over" (the courier's "queued" is not the last word yet), then the
// wait, and the confirmation's own line when it ends; the receipt is never printed
// again, and no "queued" line precedes a delivery (issue 44: one clear
// receipt line).
func TestSendAwaitReplyHandedThenConfirmed(t *testing.T) {
	w, release := newHeldReplyWorld(t)
	r := startTalking(t, w.env(t, "sent"), "--config-dir", w.config, "send", "--await-reply=10m", w.id, "ping")
	assert.Regexp(t, `^handed over: "inbox" \(session [0-9a-f-]+, pid \d+\) by courier in \S+ \(msg_id [^)]+\)$`, r.stderr.until(t, "inbox"))
	r.stderr.until(t, "waiting up to")
	release()
	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Equal(t, "pong: ping", r.stdout.text())
	assert.NotContains(t, r.stderr.text(), "queued:", r.stderr.text())
	assert.Equal(t, 1, strings.Count(r.stderr.text(), `handed over: "inbox"`), r.stderr.text())
	assert.Contains(t, r.stderr.text(), "peerctl: warning: queued, not confirmed:", "the confirmation's line (here: the fake's transcript never shows it)")
	assert.NotContains(t, r.stderr.text(), "starting the courier", "stderr is no terminal: the courier's start is not told")
}
