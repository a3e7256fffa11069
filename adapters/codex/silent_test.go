package codex

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/codexapp/codexapptest"
	"github.com/peerctl/peerctl/domain"
)

// stoppedWorld is a world whose daemon (pid 100) is stopped, as by
// SIGSTOP: its socket takes connections and nothing answers
// (codexapptest.StartStopped), and its /proc stat says state T. Each
// step is bounded by 300 ms; a delivery's timeout is an hour, so only
// that bound can end a step.
func stoppedWorld(t *testing.T) *world {
	t.Helper()
	w := worldOn(t, codexapptest.StartStopped(t))
	stat := filepath.Join(w.procRoot, "100", "stat")
	raw, err := os.ReadFile(stat)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stat, []byte(strings.Replace(string(raw), ") S ", ") T ", 1)), 0o644))
	w.reg.ask, w.cfg.ask, w.cfg.Timeout = 300*time.Millisecond, 300*time.Millisecond, time.Hour
	return w
}

// within is a context a step must end in long before (a minute): a
// step that waits for the delivery's timeout ends with it instead, and
// its words say so.
func within(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// stoppedWords are the words every path says a stopped daemon in.
func assertStoppedWords(t *testing.T, w *world, step, detail string) {
	t.Helper()
	assert.Contains(t, detail, "the Codex app-server daemon (pid 100) does not answer: it took the connection on "+w.fake.Socket+" but did not answer "+step+" within 300ms")
	assert.Contains(t, detail, "the process is stopped (state T: SIGSTOP, Ctrl-Z or a debugger): `kill -CONT 100` resumes it")
	for _, residue := range []string{"failed to", "Get \"http", "context deadline exceeded", "<unknown>"} {
		assert.NotContains(t, detail, residue)
	}
}

// Issue 41: a daemon stopped with SIGSTOP is said to be so, naming its
// pid, within the handshake's bound: the registry leaves its threads
// unread (the --no-daemon TUIs' are listed), the app-server transport is
// delivery_failed with nothing sent, and the queue transport does not run
// codex queue (which would wait about 10 s for the daemon and fail, its
// backtrace in the words).
func TestStoppedDaemonIsSaidSo(t *testing.T) {
	w := stoppedWorld(t)
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	snap, err := w.reg.Read(within(t))
	require.NoError(t, err)
	require.Len(t, snap.Unread, 1)
	assertStoppedWords(t, w, "the WebSocket upgrade", snap.Unread[0].Err.Error())
	require.Len(t, snap.Records, 1, "the --no-daemon TUI's thread is listed")
	nd := session(t, snap.Records[0])

	t.Run("app-server", func(t *testing.T) {
		target := domain.NewDormantSession(domain.Record{Harness: Kind, SessionID: threadA, SocketPath: w.fake.Socket})
		_, err := NewAppServer(w.cfg).Deliver(within(t), target, msg(t, "hi"))
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
		assertStoppedWords(t, w, "the WebSocket upgrade", r.Detail)
		assert.True(t, strings.HasSuffix(r.Detail, "; nothing was sent"), r.Detail)
	})
	t.Run("queue", func(t *testing.T) {
		q := fakeQueue(t, w.cfg)
		_, err := q.Deliver(within(t), nd, msg(t, "hi"))
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
		assertStoppedWords(t, w, "the WebSocket upgrade", r.Detail)
		assert.Contains(t, r.Detail, "codex queue would wait for it and fail, so it was not run; nothing was sent")
		_, err = os.Stat(strings.TrimPrefix(q.cfg.Env[0], "PEERCTL_FAKE_CODEX="))
		assert.ErrorIs(t, err, os.ErrNotExist, "codex queue was not run")
	})
	assert.Empty(t, w.fake.Got(), "nothing was read by the stopped daemon")
}

// A daemon that answers the handshake and then stops answering before
// the text is handed over: thread/resume is bounded as the handshake is,
// and nothing was sent (turn/start was never written).
func TestDaemonStopsAnsweringBeforeTheHandOver(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	w.fake.Handle("thread/resume", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false })
	w.cfg.ask, w.cfg.Timeout = 300*time.Millisecond, time.Hour
	_, err := NewAppServer(w.cfg).Deliver(within(t), target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "the Codex app-server daemon (pid 100) does not answer: it took the connection on "+w.fake.Socket+" but did not answer thread/resume within 300ms; it may be hung or overloaded; nothing was sent")
	for _, m := range w.fake.Got() {
		assert.NotEqual(t, "turn/start", m.Method)
	}
}

// No answer to turn/start, which carries the text: the daemon may have
// it, so the outcome is unknown, said in the daemon's words.
func TestNoAnswerToTurnStartIsOutcomeUnknown(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	turnServer(w, "idle", "pong")
	w.fake.Handle("turn/start", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false })
	w.cfg.Timeout = 500 * time.Millisecond
	_, err := NewAppServer(w.cfg).Deliver(within(t), target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Equal(t, "the Codex app-server daemon (pid 100) does not answer: it took the connection on "+w.fake.Socket+" but did not answer turn/start within 500ms; it may be hung or overloaded; the thread may or may not have the message: look before sending again", r.Detail)
}

// codex queue's error report is quoted for its error, never its
// backtrace (measured on 0.171.0 against a stopped daemon: the error,
// then "Stack backtrace:" and ten "N: <unknown>" frames).
func TestQueueQuotesCodexNotItsBacktrace(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	report := "WARNING: proceeding, even though we could not create PATH aliases\n" +
		"Error: cannot queue through an embedded app server while a local app-server daemon is running; remove configuration overrides or use --remote\n\n" +
		"Caused by:\n    0: the daemon did not answer\n\nStack backtrace:\n"
	for i := range 10 {
		report += "   " + string(rune('0'+i)) + ": <unknown>\n"
	}
	q := fakeQueue(t, w.cfg)
	q.cfg.Env = append(q.cfg.Env, "PEERCTL_FAKE_CODEX_SAY="+report)
	_, err := q.Deliver(within(t), target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Equal(t, "codex queue failed (exit status 3): Error: cannot queue through an embedded app server while a local app-server daemon is running; remove configuration overrides or use --remote / Caused by: / 0: the daemon did not answer", r.Detail)

	assert.Equal(t, "thread 'main' panicked at src/main.rs:3:5: / boom / note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
		codexSaid("a\nb\nthread 'main' panicked at src/main.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"))
	assert.Equal(t, "(no output)", codexSaid("\n"))
}

// Issue 41: the daemon died (killed: its socket is left, nothing
// listens) while a daemon-mode TUI, its client, still shows a thread: the
// thread is listed not live with that TUI's pid, saying its daemon is
// gone and the TUI takes nothing, and among the known threads it carries
// what to do (never "no process has it open"). A thread of that folder
// last written before the TUI started is not one it shows.
func TestDaemonGoneTUIStillShowsItsThread(t *testing.T) {
	w := newWorld(t, nil)
	w.kill(t)
	boot := time.Now().Add(-time.Hour)
	require.NoError(t, os.WriteFile(filepath.Join(w.procRoot, "stat"), []byte("cpu  1 2 3\nbtime "+strconv.FormatInt(boot.Unix(), 10)+"\nprocesses 9\n"), 0o644))
	fakeProc(t, w.procRoot, 200, []string{"codex", "ping first"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite")) // started 12 s after boot
	_, day := lockedHome(t, w.fake.Home)
	rollout := func(id string) string {
		f := filepath.Join(day, "rollout-2026-12-02T03-40-51-"+id+".jsonl")
		require.NoError(t, os.WriteFile(f, []byte(`{"timestamp":"x","type":"session_meta","payload":{"id":"`+id+`","timestamp":"2026-12-02T03:40:51.123Z","cwd":"/w/a","cli_version":"0.171.0"}}`+"\n"), 0o644))
		return f
	}
	rollout(threadA)
	old := rollout(threadB)
	require.NoError(t, os.Chtimes(old, boot, boot))

	snap, err := w.reg.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Records, 1, "%+v", snap.Records)
	e := domain.Classify(snap.Records[0], domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes})
	assert.Equal(t, threadA, e.Record.SessionID)
	assert.Equal(t, 200, e.Record.PID)
	assert.Equal(t, domain.VerdictStale, e.Verdict)
	assert.Equal(t, `its app-server daemon is gone (nothing listens on its control socket), while Codex TUI pid 200, a client of that daemon in /w/a, still runs and may show the thread, saying "Reconnecting to server…": it takes no message until it is restarted`, e.Reason)

	known, err := w.reg.Known(context.Background())
	require.NoError(t, err)
	byID := map[string]domain.Record{}
	for _, k := range known {
		byID[k.SessionID] = k
	}
	assert.Equal(t, "nothing was sent: Codex TUI pid 200 may still show it, but the app-server daemon it ran on is gone, so neither transport reaches it there; quit that TUI and run `codex resume "+threadA+"` in /w/a (which starts a new daemon), then send again", byID[threadA].Problem)
	assert.Equal(t, domain.VerdictStale, byID[threadA].ProblemVerdict)
	assert.Empty(t, byID[threadB].Problem, "written before the TUI started: not one it shows")
}
