package codex

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// TestMain lets the test binary stand in for codex: with
// PEERCTL_FAKE_CODEX set it is `codex queue`, writing its argv (one per
// line) and CODEX_HOME to that file and answering as Codex 0.171.0 does
// (or as PEERCTL_FAKE_CODEX_SAY says; with PEERCTL_FAKE_CODEX_HANG set it
// first hangs a minute).
func TestMain(m *testing.M) {
	if out := os.Getenv("PEERCTL_FAKE_CODEX"); out != "" {
		_ = os.WriteFile(out, []byte(strings.Join(os.Args[1:], "\n")+"\nCODEX_HOME="+os.Getenv("CODEX_HOME")), 0o600)
		if os.Getenv("PEERCTL_FAKE_CODEX_HANG") != "" {
			time.Sleep(time.Minute)
		}
		if say, ok := os.LookupEnv("PEERCTL_FAKE_CODEX_SAY"); ok {
			fmt.Println(say)
			os.Exit(3)
		}
		fmt.Printf("Queued message 01a234d7-74bb-7351-8e9a-1c29cc8d79bb for thread %s.\n", os.Args[3])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestQueueRunsCodexQueue(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	argv := filepath.Join(t.TempDir(), "argv")
	w.cfg.Program, w.cfg.From = exe, "me"
	w.cfg.Env = []string{"PEERCTL_FAKE_CODEX=" + argv, "CODEX_HOME=/wrong"}
	text := "a 'quoted' $(text); rm -rf /"
	rec, err := NewQueue(w.cfg).Deliver(context.Background(), target, msg(t, text))
	require.NoError(t, err)
	assert.Equal(t, "queued", rec.Outcome)
	assert.Equal(t, "01a234d7-74bb-7351-8e9a-1c29cc8d79bb", rec.MsgID)
	assert.Contains(t, rec.Detail, "durable")
	got, err := os.ReadFile(argv)
	require.NoError(t, err)
	assert.Equal(t, "queue\n--thread\n"+threadA+"\n--message\n"+Envelope("me", text)+"\nCODEX_HOME="+w.fake.Home, string(got), "argv without a shell, CODEX_HOME the home")

	w.cfg.Env = append(w.cfg.Env, "PEERCTL_FAKE_CODEX_SAY=Error: no thread named x")
	_, err = NewQueue(w.cfg).Deliver(context.Background(), target, msg(t, text))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "Error: no thread named x")
}

// fakeQueue is a Queue whose codex is this test binary (TestMain).
func fakeQueue(t *testing.T, cfg Config) *Queue {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg.Program, cfg.Env = exe, []string{"PEERCTL_FAKE_CODEX=" + filepath.Join(t.TempDir(), "argv")}
	return NewQueue(cfg)
}

// The receipt says when the text runs, per state (measured on 0.171.0):
// an idle TUI's thread now, a busy one's as its next turn, a closed
// thread's on codex resume; a --no-daemon TUI's thread is sent to while a
// daemon runs (it names no socket: the daemon's is not its to match).
func TestQueueReceiptSaysWhenItRuns(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	got := w.read(t)
	q := fakeQueue(t, w.cfg)

	rec, err := q.Deliver(context.Background(), session(t, got[threadA].Record), msg(t, "hi"))
	require.NoError(t, err)
	assert.Contains(t, rec.Detail, "idle: it runs now")

	busy := got[threadA].Record
	busy.Status = domain.StatusBusy
	rec, err = q.Deliver(context.Background(), session(t, busy), msg(t, "hi"))
	require.NoError(t, err)
	assert.Contains(t, rec.Detail, "busy: it runs as its next turn")

	rec, err = q.Deliver(context.Background(), session(t, got[threadN].Record), msg(t, "hi"))
	require.NoError(t, err, "a --no-daemon thread while a daemon runs")
	assert.Equal(t, "queued", rec.Outcome)

	closed := domain.NewDormantSession(domain.Record{Harness: Kind, SessionID: threadB})
	rec, err = q.Deliver(context.Background(), closed, msg(t, "hi"))
	require.NoError(t, err)
	assert.Contains(t, rec.Detail, "runs when the thread is resumed (codex resume "+threadB+")")
}

// A thread no client has open that the daemon still holds loaded (its
// TUI just quit): Codex would run a queued text at once, unseen, so it is
// refused, nothing run, with what to do (issue 28, case 3).
func TestQueueRefusesTheHeadlessWindow(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	recs, err := w.reg.Known(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, domain.VerdictHeadless, recs[0].ProblemVerdict, "Known says so too")
	assert.Contains(t, recs[0].Problem, "would run now")
	q := fakeQueue(t, w.cfg)
	_, err = q.Deliver(context.Background(), domain.NewDormantSession(recs[0]), msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotLive, r.Reason)
	assert.Contains(t, r.Detail, "would run now, in the daemon, with no one watching")
	assert.Contains(t, r.Detail, "codex resume "+threadA)
	// A person reads one sentence and a hint (Brief), each fact once;
	// the detail stays whole for --json and --debug.
	assert.Equal(t, "not_live: Codex thread "+threadA+" was just closed and its daemon would run a message now with no one watching, so nothing was sent; "+
		"open it (codex resume "+threadA+") and send, or in a minute send with --transport queue, which keeps it for the next resume", r.Brief())
	assert.Equal(t, r.Short, recs[0].ProblemShort, "Known says so too")
	_, err = os.Stat(strings.TrimPrefix(q.cfg.Env[0], "PEERCTL_FAKE_CODEX="))
	assert.ErrorIs(t, err, os.ErrNotExist, "codex queue never ran")
	_, err = q.Plan(domain.NewDormantSession(recs[0]), msg(t, "hi"))
	assert.Error(t, err, "--dry-run says the same")
}

// Ctrl-C or SIGTERM while codex queue runs is outcome_unknown saying it
// was interrupted (not "did not finish within" the timeout), and codex
// queue is ended with the call.
func TestQueueInterrupted(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	q := fakeQueue(t, w.cfg)
	q.cfg.Env = append(q.cfg.Env, "PEERCTL_FAKE_CODEX_HANG=1")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := q.Deliver(ctx, session(t, w.read(t)[threadA].Record), msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "interrupted while codex queue ran")
	assert.Less(t, time.Since(start), 10*time.Second)
}
