//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1): a send that waits on a real Claude Code session
// that does not answer (no network: its turn retries an API it cannot
// reach) prints its receipt before the wait ends. A test of order: the
// wait ends only by the Ctrl-C the test sends after it read the receipt.

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

func TestLiveSendWaitTellsTheReceiptFirst(t *testing.T) {
	bin := livecc.Require(t, liveVersion)
	root := livecc.NewRoot(t)
	s := livecc.Start(t, bin, livecc.Options{Root: root, Label: "silent", WaitSettled: true})

	t.Run("--wait", func(t *testing.T) {
		r := startTalking(t, configEnv(t, s.ConfigDir), "send", "--transport", "socket", "--confirm-timeout", "30s", "--wait=10m", s.SessionID, "peerctl live talk check")
		assert.Regexp(t, `^(delivered|posted): "[^"]*" \(session `+s.SessionID+`, pid \d+\) by socket in `, r.stdout.until(t, s.SessionID))
		r.stderr.until(t, "peerctl: waiting up to 10m0s")
		require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
		require.Equal(t, 0, r.exit(t), "stderr: %s\nscreen:\n%s", r.stderr.text(), s.Screen())
		assert.Regexp(t, `(?m)^wait: interrupted: still `, r.stdout.text(), "the wait ended by the Ctrl-C that followed the receipt")
	})

	t.Run("--durable --wait", func(t *testing.T) {
		// Through peerctl serve: the service tells the hand-over as it
		// happens, so the receipt still comes before the wait ends.
		w := serveWorld{state: t.TempDir(), run: catSocketDir(t)}
		t.Cleanup(func() { w.stopServe(t) })
		env := append(configEnv(t, s.ConfigDir), "XDG_STATE_HOME="+w.state, "XDG_RUNTIME_DIR="+w.run)
		r := startTalking(t, env, "send", "--durable=1h", "--transport", "socket", "--confirm-timeout", "30s", "--wait=10m", s.SessionID, "peerctl live durable talk check")
		assert.Regexp(t, `^(delivered|posted): "[^"]*" \(session `+s.SessionID+`, pid \d+, outbox message 1\) by socket in `, r.stdout.until(t, s.SessionID))
		r.stderr.until(t, "peerctl: waiting up to 10m0s")
		require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
		require.Equal(t, 0, r.exit(t), "stderr: %s\nscreen:\n%s", r.stderr.text(), s.Screen())
		assert.Regexp(t, `(?m)^wait: interrupted: still `, r.stdout.text(), "the wait ended by the Ctrl-C that followed the receipt")
	})

	t.Run("--await-reply", func(t *testing.T) {
		r := startTalking(t, courierEnv(t, s.ConfigDir, bin), "send", "--await-reply=10m", "--confirm-timeout", "30s", s.SessionID, "peerctl live talk check, no answer")
		assert.Regexp(t, `^(delivered|handed over|held): "[^"]*" \(session `+s.SessionID+`, pid \d+\) by courier in .* \(msg_id `, r.stderr.until(t, s.SessionID))
		r.stderr.until(t, "to reply; Ctrl-C stops the wait")
		require.NoError(t, r.cmd.Process.Signal(os.Interrupt))
		assert.Equal(t, 9, r.exit(t), "stderr: %s\nscreen:\n%s", r.stderr.text(), s.Screen())
		assert.Contains(t, r.stderr.text(), "no_reply: the message was handed over")
		assert.Contains(t, r.stderr.text(), "the wait was interrupted before a reply came")
		assert.Empty(t, r.stdout.text(), "no reply, nothing on stdout")
	})
}
