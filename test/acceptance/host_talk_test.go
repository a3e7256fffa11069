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
	assert.Regexp(t, `^posted: "quiet" \(session 26df9a5b-d23c-4223-a45d-b9ec61fda652, pid \d+\) on box`, r.stdout.until(t, "quiet"))
	assert.Regexp(t, `^peerctl: waiting up to 10m0s \(until \d\d:\d\d:\d\d UTC\) for the turn on the message to end; Ctrl-C stops the wait`, r.stderr.until(t, "waiting up to"))

	f.say(t, "waiting dialog open")
	assert.Equal(t, `peerctl: note: "quiet" is waiting (dialog open): it waits on its user and takes nothing up until someone answers it there`,
		r.stderr.until(t, "dialog open"))
	f.stop(t)

	require.Equal(t, 0, r.exit(t), "stderr: %s", r.stderr.text())
	assert.Regexp(t, `(?m)^wait: exited: the session ended`, r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stdout.text(), `posted: "quiet"`), "the receipt is printed once: %s", r.stdout.text())
	assert.Equal(t, 1, strings.Count(r.stderr.text(), "dialog open"), "said once: %s", r.stderr.text())
}
