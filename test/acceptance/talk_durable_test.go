//go:build unix

package acceptance

// A durable send that waits talks as a plain one does: the service tells
// the command of the hand-over as it happens, and the command prints the
// receipt (with its outbox message) and the wait's line then. Tests of
// order, never of time: each wait ends only by what the test does after
// it read the receipt.

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --durable --wait: the receipt, one line naming the outbox message, then
// the wait's line and the confirmation, while the service waits.
func TestDurableSendWaitTellsTheReceiptFirst(t *testing.T) {
	cfg := t.TempDir()
	w := serveWorld{state: t.TempDir(), run: catSocketDir(t)}
	t.Cleanup(func() { w.stopServe(t) })
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	env := append(configEnv(t, cfg), "XDG_STATE_HOME="+w.state, "XDG_RUNTIME_DIR="+w.run)
	r := startTalking(t, env, "send", "--durable=1h", "--transport", "socket", "--wait=10m", "quiet", "go")
	assert.Regexp(t, `^posted: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+, outbox message 1\) by socket in `, r.stdout.until(t, "quiet"))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for the turn on the message to end; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))
	assert.Regexp(t, `^peerctl: confirmed: its transcript shows the text in the session's queue`, r.stderr.until(t, "confirmed"))

	f.say(t, "waiting dialog open")
	assert.Contains(t, r.stderr.until(t, "dialog open"), `peerctl: note: "quiet" is waiting (dialog open)`)
	f.stop(t)

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Regexp(t, `(?m)^wait: exited: the session ended`, r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stdout.text(), `posted: "quiet"`), "the receipt is printed once: %s", r.stdout.text())
	assert.NotContains(t, r.stdout.text(), "outbox: message", "one line for one message: %s", r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stderr.text(), "confirmed:"), "said once: %s", r.stderr.text())
}

// Ctrl-C after the hand-over stops the wait, not the message: the
// service hears the hang-up and answers that the wait was interrupted,
// exit 0, as a plain send's wait (never outcome_unknown).
func TestDurableSendWaitCtrlCStopsTheWait(t *testing.T) {
	cfg := t.TempDir()
	w := serveWorld{state: t.TempDir(), run: catSocketDir(t)}
	t.Cleanup(func() { w.stopServe(t) })
	startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	env := append(configEnv(t, cfg), "XDG_STATE_HOME="+w.state, "XDG_RUNTIME_DIR="+w.run)
	r := startTalking(t, env, "send", "--durable=1h", "--transport", "socket", "--wait=10m", "quiet", "go")
	r.stdout.until(t, "outbox message 1")
	r.stderr.until(t, "waiting up to")
	require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Regexp(t, `(?m)^wait: interrupted`, r.stdout.text())
	assert.NotContains(t, r.stderr.text(), "outcome_unknown")
}

// --durable --await-reply: the receipt on stderr, then that it waits for
// the reply; the session answers only once both were read.
func TestDurableSendAwaitReplyTellsTheReceiptFirst(t *testing.T) {
	rw, release := newHeldReplyWorld(t)
	w := serveWorld{sendWorld: rw, state: t.TempDir(), run: catSocketDir(t)}
	t.Cleanup(func() { w.stopServe(t) })
	r := startTalking(t, w.env(t), "--config-dir", w.config, "send", "--durable", "--await-reply=10m", "--no-confirm", w.id, "ping")
	assert.Regexp(t, `^queued: "inbox" \(session [0-9a-f-]+, pid \d+, outbox message 1\) by courier`, r.stderr.until(t, `"inbox"`))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for "inbox" to reply; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))
	release()

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Equal(t, "pong: ping", r.stdout.text(), "stdout is the reply and nothing else")
	assert.Equal(t, 1, strings.Count(r.stderr.text(), `queued: "inbox"`), "the receipt is printed once: %s", r.stderr.text())
}

// A durable send that waits, to a session not there: stored, and it says
// that the wait was not done now, and who does it.
func TestDurableSendWaitToAnAbsentSessionSaysItDidNotWait(t *testing.T) {
	w := newServeWorld(t)
	r := w.peerctl(t, nil, "send", "--durable=1m", "--wait=4s", "absent", "later")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "stored: message 1 for \"absent\"")
	assert.Contains(t, string(r.Stderr), "peerctl: note: nothing was waited for (--wait): message 1 was not handed over now; the service waits for the end of the turn on it when it hands it over, and records it: peerctl outbox show 1")

	r = w.peerctl(t, nil, "send", "--durable=1m", "--await-reply=4s", "--json", "absent", "later too")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "nothing was waited for (--await-reply): message 2")
	assert.Contains(t, string(r.Stderr), "waits for its reply")
}
