//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1): confirmation and watch against real Claude Code
// 2.1.328 sessions started headless by test/livecc.

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/testproc"
)

const liveVersion = "2.1.328"

// nextKind returns the next event of kind for pid, skipping the others
// (a real session writes its record in steps: status events come and go).
func (w *watchProc) nextKind(t *testing.T, pid int, kind string, within time.Duration, after string) watchEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-w.events:
			require.True(t, ok, "watch ended while waiting for %s after %s; stderr: %s", kind, after, w.stderr)
			if ev.PID == pid && ev.Event == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event for pid %d within %s after %s", kind, pid, within, after)
		}
	}
}

func TestLiveSocketSendIsDelivered(t *testing.T) {
	bin := livecc.Require(t, liveVersion)
	// Settled: before that, a real session holds inbox posts and enqueues
	// them only once ready (measured: ~13 s with the fake key).
	s := livecc.Start(t, bin, livecc.Options{WaitSettled: true})
	const text = "peerctl live check: \"quotes\", tab\t, ünï and a newline\nend"
	r := runPeerctl(t, runOpts{Env: configEnv(t, s.ConfigDir)}, "send", "--transport", "socket", "--json", "--confirm-timeout", "30s", s.SessionID, text)
	require.Equal(t, 0, r.Code, "stderr: %s\nscreen:\n%s", r.Stderr, s.Screen())
	var got receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.Equal(t, "delivered", got.Outcome, "note: %s", got.ConfirmNote)
	assert.True(t, got.Confirmed)
	// The slug rule, pinned: peerctl's transcript path is the one Claude Code wrote.
	assert.Equal(t, s.TranscriptPath(), got.Transcript)
	at, err := time.Parse(time.RFC3339Nano, got.ConfirmedAt)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), at, time.Minute)
}

func TestLiveWatchAppearedDiedGone(t *testing.T) {
	bin := livecc.Require(t, liveVersion)
	root := livecc.NewRoot(t)
	w := startWatch(t, configEnv(t, root+"/config"))
	time.Sleep(300 * time.Millisecond) // let the watch take its first read

	crashing := livecc.Start(t, bin, livecc.Options{Root: root, Label: "crashing"})
	ev := w.nextKind(t, crashing.PID, "appeared", 30*time.Second, "a session started")
	assert.False(t, ev.Initial)
	assert.Equal(t, crashing.SessionID, ev.SessionID)
	crashing.Crash()
	ev = w.nextKind(t, crashing.PID, "died", 30*time.Second, "SIGKILL")
	assert.Equal(t, "stale", ev.Verdict)

	leaving := livecc.Start(t, bin, livecc.Options{Root: root, Label: "leaving"})
	w.nextKind(t, leaving.PID, "appeared", 30*time.Second, "a second session started")
	leaving.Stop()
	w.nextKind(t, leaving.PID, "gone", 30*time.Second, "a clean exit")

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(bound):
		t.Fatalf("watch did not end within %s of SIGINT", bound)
	}
}

// send --wait on a real session: the wait ends on idle only after the
// session took the message up (its transcript's peer "user" line), and
// says when. Without a key the turn fails at once ("Not logged in"), so
// the whole turn is short. Run on a quiet machine and beside two CPU hogs:
// under load Claude Code writes the take-up line after the record already
// says idle, and the wait must still see it.
func TestLiveSendWaitEndsAfterTakeUp(t *testing.T) {
	bin := livecc.Require(t, liveVersion)
	for _, hogs := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d CPU hogs", hogs), func(t *testing.T) {
			liveSendWaitEndsAfterTakeUp(t, bin, hogs)
		})
	}
}

func liveSendWaitEndsAfterTakeUp(t *testing.T, bin string, hogs int) {
	s := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	testproc.Hogs(t, hogs)
	// The runner's bound is above the command's own (30 s to confirm, then
	// 60 s to wait), so a slow run shows its receipt rather than a kill.
	r := runPeerctl(t, runOpts{Env: configEnv(t, s.ConfigDir), Timeout: 150 * time.Second}, "send", "--transport", "socket", "--json",
		"--confirm-timeout", "30s", "--wait=60s", s.SessionID, "peerctl live wait check")
	require.Equal(t, 0, r.Code, "stderr: %s\nscreen:\n%s", r.Stderr, s.Screen())
	var got receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	require.NotNil(t, got.Wait)
	assert.Equal(t, "idle", got.Wait.End, "note: %s; screen:\n%s", got.Wait.Note, s.Screen())
	require.NotEmpty(t, got.Wait.TakenUpAt, "the take-up line was found; note: %s", got.Wait.Note)
	taken, err := time.Parse(time.RFC3339Nano, got.Wait.TakenUpAt)
	require.NoError(t, err)
	enq, err := time.Parse(time.RFC3339Nano, got.ConfirmedAt)
	require.NoError(t, err)
	assert.False(t, taken.Before(enq), "taken up %s before enqueued %s", taken, enq)
	rec := s.Record()
	sua, ok := rec["statusUpdatedAt"].(float64)
	require.True(t, ok, "record has statusUpdatedAt: %v", rec)
	assert.Equal(t, "idle", rec["status"])
	assert.True(t, time.UnixMilli(int64(sua)).After(taken), "idle (statusUpdatedAt %d) after the take-up %s", int64(sua), taken)
}
