//go:build unix

package acceptance

// Waits that talk over ssh (--host): the far side's peerctl tells its
// send's moments as they happen (docs/OUTPUT.md, "send's events"), and
// this side prints them as a send here does. Tests of order, never of
// time: each wait ends only by what the test does after it read the
// receipt, so a receipt relayed at the end is never read in time.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
)

// --await-reply over ssh: the far receipt on stderr, then that it waits;
// the session answers only once both were read.
func TestHostAwaitReplyTellsTheReceiptFirst(t *testing.T) {
	rw, release := newHeldReplyWorld(t)
	w := hostOf(t, rw)
	courier := []string{"PEERCTL_CLAUDE=" + fakeClaudeBin(t), "FAKECLAUDE_SCENARIO=sent", "FAKECLAUDE_RECORD=" + w.sendWorld.record}
	r := startTalking(t, w.env(t, courier...), "send", "--host", "box", "--await-reply=10m", "--no-confirm", w.id, "ping")
	assert.Regexp(t, `^queued: "inbox" .* on box by courier`, r.stderr.until(t, `queued: "inbox"`))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for "inbox" to reply; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))
	release()

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Equal(t, "pong: ping", r.stdout.text(), "stdout is the reply and nothing else")
	assert.Equal(t, 1, strings.Count(r.stderr.text(), `queued: "inbox"`), "the receipt is printed once: %s", r.stderr.text())
}

// --wait over ssh: the far receipt on stdout, then that it waits and, once
// seen there, that the target waits on a dialog; the wait ends when the
// session does, which the test makes happen only after all were read.
func TestHostWaitTellsTheReceiptAndTheDialog(t *testing.T) {
	cfg, bin := t.TempDir(), t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + t.TempDir(),
		"CLAUDE_CONFIG_DIR=" + cfg, "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH), "PEERCTL_HOST_TIMEOUT=10s"}
	r := startTalking(t, env, "send", "--host", "box", "--transport", "socket", "--wait=10m", "quiet", "go")
	talksThroughTheWait(t, r, f, `^posted: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+\) on box`)
}

// talksThroughTheWait checks r, a --wait=10m send to f (the session
// "quiet"), as it goes: the receipt on stdout as the pattern receipt says,
// then the wait's line and, once f says it waits on a dialog, that note;
// the wait ends only when f does, after all were read.
func talksThroughTheWait(t *testing.T, r *running, f *fake, receipt string) {
	t.Helper()
	assert.Regexp(t, receipt, r.stdout.until(t, `"quiet"`))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for the turn on the message to end; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))

	f.say(t, "waiting dialog open")
	assert.Equal(t, `peerctl: note: "quiet" is waiting (dialog open): it waits on its user and takes nothing up until someone answers it there`,
		r.stderr.until(t, "dialog open"))
	f.stop(t)

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Regexp(t, `(?m)^wait: exited: the session ended`, r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stdout.text(), `"quiet"`), "the receipt is printed once: %s", r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stderr.text(), "dialog open"), "said once: %s", r.stderr.text())
}

// farServed is a far side (reached through the fake ssh) whose own peerctl
// serve runs: a plain send that waits, with the default transport, goes
// through that service's warm courier there.
func farServed(t *testing.T, cfg string) serveWorld {
	bin := t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	far := serveWorld{sendWorld: sendWorld{record: t.TempDir()}, state: t.TempDir(), run: catSocketDir(t),
		more: []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + cfg, "PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH),
			"PEERCTL_HOST_TIMEOUT=10s"}}
	t.Cleanup(func() { far.stopServe(t) })
	return far
}

// --wait over ssh, carried there by the far side's own peerctl serve: the
// far side tells the service's moments as its send's events, so the
// receipt, the wait and the dialog are printed here as they happen.
func TestHostWaitThroughTheFarServiceTellsAsItGoes(t *testing.T) {
	cfg := t.TempDir()
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	far := farServed(t, cfg)
	far.startServe(t)
	mine := t.TempDir() // a courier of the command's own would record here
	r := startTalking(t, append(far.env(t), "FAKECLAUDE_RECORD="+mine), "send", "--host", "box", "--wait=10m", "quiet", "go")
	talksThroughTheWait(t, r, f, `^handed over: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+\) on box by courier`)
	assert.FileExists(t, filepath.Join(far.record, "sent.jsonl"), "the far service's courier carried it")
	assert.NoFileExists(t, filepath.Join(mine, "sent.jsonl"), "no courier of the far command's own")
}

// --durable --wait over ssh: this machine's service keeps the message and
// sends it through ssh; the far side's events reach the service, which
// tells them to the command as they happen, with the outbox message.
func TestHostDurableWaitTellsAsItGoes(t *testing.T) {
	cfg := t.TempDir()
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	here := farServed(t, cfg) // one machine: its service is the one the send goes through
	r := startTalking(t, here.env(t), "send", "--host", "box", "--durable=1h", "--transport", "socket", "--wait=10m", "quiet", "go")
	talksThroughTheWait(t, r, f, `^posted: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+, outbox message 1\) on box by socket`)
}

// --durable --wait over ssh: the hand-over is in the outbox the moment the
// far side says it (its handed event), not when its wait ends minutes
// later; so a service killed during that wait finds the message delivered
// when it starts again, not outcome_unknown, and never sends it again.
func TestHostDurableWaitRecordsTheHandOverWhenTold(t *testing.T) {
	cfg := t.TempDir()
	f := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	here := farServed(t, cfg)
	here.config, here.sessions = cfg, filepath.Join(cfg, "sessions")
	r := startTalking(t, here.env(t), "send", "--host", "box", "--durable=1h", "--transport", "socket", "--wait=10m", "quiet", "go")
	assert.Regexp(t, `outbox message 1\) on box by socket`, r.stdout.until(t, `"quiet"`))
	r.stderr.until(t, "waiting up to")
	m := here.show(t, 1)
	assert.Equal(t, "delivered", m.State, "recorded at the hand-over, while the far wait runs: %+v", m.History)

	here.stopServe(t, syscall.SIGKILL)
	here.startServe(t)
	m = here.show(t, 1)
	assert.Equal(t, "delivered", m.State, "%+v", m.History)
	for _, h := range m.History {
		assert.NotEqual(t, "outcome_unknown", h.State, "%+v", m.History)
	}
	f.stop(t)
	r.exit(t)
}
