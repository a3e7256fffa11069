package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/codexapp/codexapptest"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
)

const (
	threadA = "01a234d3-852a-7530-a429-495bba85092c"
	threadB = "01a234d5-a0aa-7921-99f9-ccf1a196ec64"
	threadN = "01a234d7-3e0a-7d41-86b7-5c81381f3c25"
)

// fakeProc writes one process into a fake /proc: comm, cmdline, cwd,
// stat (start ticks 1000+pid) and open files.
func fakeProc(t *testing.T, root string, pid int, args []string, cwd string, files ...string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "comm"), []byte("codex\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644))
	stat := fmt.Sprintf("%d (codex) S 1 %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0", pid, pid, pid, 1000+pid)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	require.NoError(t, os.Symlink(cwd, filepath.Join(dir, "cwd")))
	for i, f := range files {
		require.NoError(t, os.Symlink(f, filepath.Join(dir, "fd", fmt.Sprint(i+3))))
	}
}

type world struct {
	fake     *codexapptest.Server
	procRoot string
	reg      *Registry
	cfg      Config
}

// newWorld is a fake daemon (pid 100, daemon.pid) holding loaded, with
// thread/list rows in the folders given.
func newWorld(t *testing.T, rows map[string]string) *world {
	t.Helper()
	var loaded []string
	var data []map[string]any
	for id, cwd := range rows {
		loaded = append(loaded, id)
		data = append(data, map[string]any{"id": id, "cwd": cwd, "name": "name " + id[:4], "preview": "p", "status": map[string]any{"type": "idle"}, "cliVersion": "0.171.0", "createdAt": 1, "updatedAt": 2})
	}
	return worldOn(t, codexapptest.Start(t, map[string]codexapptest.Handler{
		"thread/loaded/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": loaded}, "", true
		},
		"thread/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": data}, "", true
		},
	}))
}

// worldOn is a world around the fake daemon f: daemon.pid names pid 100,
// a fake /proc holds it.
func worldOn(t *testing.T, f *codexapptest.Server) *world {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(f.Home, "app-server-daemon"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(f.Home, "app-server-daemon", "daemon.pid"), []byte(`{"pid":100}`), 0o644))
	w := &world{fake: f, procRoot: t.TempDir()}
	fakeProc(t, w.procRoot, 100, []string{"codex", "app-server", "--listen", "unix://"}, "/", filepath.Join(f.Home, "state_5.sqlite"))
	w.reg = NewRegistry(f.Home, "test", "")
	w.reg.procRoot, w.reg.dirs = w.procRoot, []string{f.Dir}
	w.cfg = Config{Home: f.Home, dirs: []string{f.Dir}, procRoot: w.procRoot, Window: 5 * time.Second}
	return w
}

// kill ends the fake daemon as kill -9 does: its socket is left, nothing
// listens on it.
func (w *world) kill(t *testing.T) {
	t.Helper()
	w.fake.Close()
	ln, err := net.Listen("unix", w.fake.Socket)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
}

func (w *world) read(t *testing.T) map[string]domain.Entry {
	t.Helper()
	snap, err := w.reg.Read(context.Background())
	require.NoError(t, err)
	out := map[string]domain.Entry{}
	for _, r := range snap.Records {
		out[r.SessionID] = domain.Classify(r, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes})
	}
	return out
}

// The liveness rule (docs/CODEX.md): a loaded thread is live only while a
// client runs in its folder; the daemon's afterglow is headless; fewer
// clients than threads in a folder cannot be told apart.
func TestRegistryClientRule(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a", threadB: "/w/b"})
	got := w.read(t)
	require.Len(t, got, 2)
	for _, id := range []string{threadA, threadB} {
		assert.Equal(t, domain.VerdictHeadless, got[id].Verdict, "no client: the daemon merely holds it")
		assert.Contains(t, got[id].Reason, "no Codex client runs in")
	}

	fakeProc(t, w.procRoot, 200, []string{"codex", "hello"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	got = w.read(t)
	assert.Equal(t, domain.VerdictLive, got[threadA].Verdict)
	assert.Equal(t, 200, got[threadA].Record.PID, "the client's pid")
	assert.Equal(t, "1200", got[threadA].Record.ProcStart)
	assert.Equal(t, KindClient, got[threadA].Record.Kind)
	assert.True(t, got[threadA].Addressable, got[threadA].Unaddressable)
	assert.Equal(t, domain.StatusIdle, got[threadA].Record.Status)
	assert.Equal(t, "name 01a2", got[threadA].Record.Name)
	assert.Equal(t, domain.VerdictHeadless, got[threadB].Verdict)

	// A daemon-mode TUI that holds no file of the home (measured: after a
	// while idle it keeps only its terminal and its connection) is found
	// by its environment: $CODEX_HOME, or $HOME/.codex.
	fakeProc(t, w.procRoot, 210, []string{"codex"}, "/w/b")
	require.NoError(t, os.WriteFile(filepath.Join(w.procRoot, "210", "environ"), []byte("PATH=/bin\x00CODEX_HOME="+w.fake.Home+"\x00"), 0o644))
	got = w.read(t)
	assert.Equal(t, domain.VerdictLive, got[threadB].Verdict)
	assert.Equal(t, 210, got[threadB].Record.PID)
	require.NoError(t, os.WriteFile(filepath.Join(w.procRoot, "210", "environ"), []byte("HOME="+filepath.Dir(w.fake.Home)+"\x00"), 0o644))
	assert.Equal(t, domain.VerdictHeadless, w.read(t)[threadB].Verdict, "$HOME/.codex is another home")
	require.NoError(t, os.RemoveAll(filepath.Join(w.procRoot, "210")))

	// A codex process of another home, and a codex queue, are no clients.
	fakeProc(t, w.procRoot, 300, []string{"codex", "hello"}, "/w/b", "/elsewhere/state_5.sqlite")
	fakeProc(t, w.procRoot, 301, []string{"codex", "queue", "--thread", threadB}, "/w/b", filepath.Join(w.fake.Home, "queue_1.sqlite"))
	assert.Equal(t, domain.VerdictHeadless, w.read(t)[threadB].Verdict)
}

func TestRegistryAmbiguous(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a", threadB: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	got := w.read(t)
	for _, id := range []string{threadA, threadB} {
		assert.Equal(t, domain.VerdictAmbiguous, got[id].Verdict)
		assert.Contains(t, got[id].Reason, "cannot be told")
	}
	fakeProc(t, w.procRoot, 201, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	got = w.read(t)
	assert.Equal(t, domain.VerdictLive, got[threadA].Verdict)
	assert.Equal(t, 100, got[threadA].Record.PID, "two clients there: which has which is not known, the pid is the daemon's")
	assert.NotEmpty(t, got[threadA].Record.Warnings)
}

func TestRegistryNoDaemonTUIAndBadInput(t *testing.T) {
	w := newWorld(t, map[string]string{"not-a-uuid": "/w/a", threadA: ""})
	locks, day := lockedHome(t, w.fake.Home)
	good := filepath.Join(day, "rollout-2026-12-02T03-40-51-"+threadN+".jsonl")
	require.NoError(t, os.WriteFile(good, []byte(`{"timestamp":"x","type":"session_meta","payload":{"id":"`+threadN+`","timestamp":"2026-12-02T03:40:51.123Z","cwd":"/w/nd","cli_version":"0.171.0"}}`+"\n{\"type\":\"x\"}\n"+
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"first words\nof it"}]}}}`+"\n"+
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"second"}]}}}`+"\n"), 0o644))
	cut := filepath.Join(day, "rollout-2026-12-02T03-41-00-"+threadB+".jsonl")
	require.NoError(t, os.WriteFile(cut, []byte(`{"timestamp":"x","type":"session_meta","payload":{"id":"`), 0o644))
	fakeProc(t, w.procRoot, 400, []string{"codex", "--no-daemon"}, "/w/nd", filepath.Join(locks, threadN+".lock"), good)
	fakeProc(t, w.procRoot, 401, []string{"codex", "--no-daemon"}, "/w/x", filepath.Join(locks, threadB+".lock"), cut)

	got := w.read(t)
	nd := got[threadN]
	assert.Equal(t, domain.VerdictLive, nd.Verdict)
	assert.Equal(t, KindNoDaemon, nd.Record.Kind)
	assert.Equal(t, 400, nd.Record.PID)
	assert.Equal(t, "/w/nd", nd.Record.Cwd)
	assert.Equal(t, "first words of it", nd.Record.Name, "its first message, as thread/list's preview")

	assert.Equal(t, domain.VerdictMalformed, got[threadB].Verdict, "a rollout cut mid-line is a skipped record")
	assert.Contains(t, got[threadB].Reason, "truncated")

	assert.Equal(t, domain.VerdictHeadless, got[threadA].Verdict)
	assert.Contains(t, got[threadA].Reason, "no row in thread/list")

	assert.Equal(t, domain.VerdictMalformed, got["not-a-uuid"].Verdict)
	assert.Contains(t, got["not-a-uuid"].Reason, "not a UUID")
}

func TestRegistryWithoutDaemonOrHome(t *testing.T) {
	r := NewRegistry(filepath.Join(t.TempDir(), "none"), "test", "")
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	assert.True(t, snap.Missing)

	r = NewRegistry(t.TempDir(), "test", "")
	r.procRoot = t.TempDir()
	snap, err = r.Read(context.Background())
	require.NoError(t, err, "no daemon is no error")
	assert.Empty(t, snap.Records)
}

func TestRegistryRefusesASocketNotOurs(t *testing.T) {
	w := newWorld(t, nil)
	w.reg.dirs = nil // the real folder, /tmp/codex-daemon-<uid>: the fake's link points elsewhere
	_, err := w.reg.Read(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "control socket is not ours")
}

// A daemon that runs but does not answer leaves its threads unread
// (naming Codex), not the --no-daemon TUIs' (issue 28, case 4).
func TestRegistryDaemonThatNeverAnswers(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	w.fake.Handle("thread/loaded/list", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false })
	w.reg.ask = 200 * time.Millisecond
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	snap, err := w.reg.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Unread, 1)
	assert.Equal(t, Kind, snap.Unread[0].Harness)
	assert.Contains(t, snap.Unread[0].Err.Error(), "the Codex app-server daemon (pid 100) does not answer: it took the connection on "+w.fake.Socket+" but did not answer thread/loaded/list within 200ms; it may be hung or overloaded")
	require.Len(t, snap.Records, 1, "the --no-daemon TUI's thread is listed all the same")
	assert.Equal(t, threadN, snap.Records[0].SessionID)
}

// noDaemonTUI fakes a --no-daemon TUI (pid) of home holding thread id's
// writer lock and rollout, in /w/nd.
func noDaemonTUI(t *testing.T, home, procRoot string, pid int, id string) {
	t.Helper()
	locks, day := lockedHome(t, home)
	rollout := filepath.Join(day, "rollout-2026-12-02T03-40-51-"+id+".jsonl")
	require.NoError(t, os.WriteFile(rollout, []byte(`{"timestamp":"x","type":"session_meta","payload":{"id":"`+id+`","timestamp":"2026-12-02T03:40:51.123Z","cwd":"/w/nd","cli_version":"0.171.0"}}`+"\n"), 0o644))
	fakeProc(t, procRoot, pid, []string{"codex", "--no-daemon"}, "/w/nd", filepath.Join(locks, id+".lock"), rollout)
}

// A --no-daemon TUI in a home where no daemon ever ran is live and
// addressable (Codex's queue reaches it) and names no socket; with a
// daemon up it names none either: the daemon does not serve it (issue 28,
// case 1).
func TestRegistryNoDaemonTUIWithoutAnyDaemon(t *testing.T) {
	home, procRoot := t.TempDir(), t.TempDir()
	noDaemonTUI(t, home, procRoot, 400, threadN)
	r := NewRegistry(home, "test", "")
	r.procRoot = procRoot
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Records, 1)
	e := domain.Classify(snap.Records[0], domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes})
	assert.Equal(t, domain.VerdictLive, e.Verdict, e.Reason)
	assert.True(t, e.Addressable, e.Unaddressable)
	assert.Empty(t, e.Record.SocketPath)
	assert.Equal(t, "codex-peer:v1:400:"+threadN+":queue", e.Endpoint().String())

	// A name given with /rename (session_index.jsonl) is its name.
	require.NoError(t, os.WriteFile(filepath.Join(home, "session_index.jsonl"), []byte(`{"id":"`+threadN+`","thread_name":"night shift","updated_at":"x"}`+"\n"), 0o644))
	snap, err = r.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "night shift", snap.Records[0].Name)

	w := newWorld(t, nil)
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	nd := w.read(t)[threadN]
	assert.True(t, nd.Addressable, nd.Unaddressable)
	assert.Empty(t, nd.Record.SocketPath, "the daemon does not serve a --no-daemon thread")
}

// A daemon killed leaves its socket behind, nothing listening: a warning
// naming the clients it left, not the end of the listing: the --no-daemon
// TUIs' threads are listed (issue 28, case 4).
func TestRegistryDaemonGone(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	w.kill(t)
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	noDaemonTUI(t, w.fake.Home, w.procRoot, 400, threadN)
	snap, err := w.reg.Read(context.Background())
	require.NoError(t, err)
	assert.Empty(t, snap.Unread)
	require.Len(t, snap.Warnings, 1)
	assert.Contains(t, snap.Warnings[0], "daemon is not running")
	assert.Contains(t, snap.Warnings[0], "pids 200")
	require.Len(t, snap.Records, 1)
	assert.Equal(t, threadN, snap.Records[0].SessionID)
}

func session(t *testing.T, rec domain.Record) domain.Session {
	t.Helper()
	s, err := domain.NewSession(domain.Classify(rec, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}))
	require.NoError(t, err)
	return s
}

// turnServer answers resume and turn/start, then notifies turn/started,
// the agentMessage and turn/completed (as Codex 0.171.0 does).
func turnServer(w *world, status, reply string) {
	w.fake.Handle("thread/resume", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
		return map[string]any{"thread": map[string]any{"id": threadA, "status": map[string]any{"type": status}}}, "", true
	})
	w.fake.Handle("turn/start", func(p *codexapptest.Peer, m codexapptest.Msg) (any, string, bool) {
		go func() {
			turn := map[string]any{"id": "turn-1", "status": "inProgress", "items": []any{}}
			if status == "idle" {
				_ = p.Notify("turn/started", map[string]any{"threadId": threadA, "turn": turn})
			} else {
				_ = p.Notify("item/started", map[string]any{"threadId": threadA, "turnId": "turn-1", "item": map[string]any{"type": "userMessage"}})
			}
			_ = p.Notify("item/completed", map[string]any{"threadId": threadA, "turnId": "turn-1", "item": map[string]any{"type": "agentMessage", "text": reply}})
			_ = p.Notify("turn/completed", map[string]any{"threadId": threadA, "turn": map[string]any{"id": "turn-1", "status": "completed", "items": []any{}}})
		}()
		return map[string]any{"turn": map[string]any{"id": "turn-1", "status": "inProgress", "items": []any{}}}, "", true
	})
}

func TestAppServerDelivers(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	turnServer(w, "idle", "pong")
	target := session(t, w.read(t)[threadA].Record)
	text := "exact \"text\"\n with\ttabs ✓ and </cross-session-message>"
	w.cfg.From = "alice\nbob"
	rec, err := NewAppServer(w.cfg).Deliver(context.Background(), target, msg(t, text))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome)
	assert.Equal(t, "turn-1", rec.MsgID)
	var sent struct {
		ThreadID string `json:"threadId"`
		Input    []struct {
			Type, Text string
		} `json:"input"`
	}
	for _, m := range w.fake.Got() {
		if m.Method == "turn/start" {
			require.NoError(t, json.Unmarshal(m.Params, &sent))
		}
	}
	assert.Equal(t, threadA, sent.ThreadID)
	require.Len(t, sent.Input, 1)
	assert.Equal(t, "[peerctl: a message from another session, from \"alice bob\"]\n"+text, sent.Input[0].Text, "the text byte for byte after one header line")
}

func TestAppServerBusyThreadJoinsTheRunningTurn(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	turnServer(w, "active", "pong")
	rec, err := NewAppServer(w.cfg).Deliver(context.Background(), session(t, w.read(t)[threadA].Record), msg(t, "hi"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome)
	assert.Contains(t, rec.Detail, "busy")
}

func TestAppServerRefusals(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	t.Run("Codex refuses the turn", func(t *testing.T) {
		w.fake.Handle("thread/resume", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"thread": map[string]any{"id": threadA, "status": map[string]any{"type": "idle"}}}, "", true
		})
		w.fake.Handle("turn/start", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "thread is archived", true })
		_, err := NewAppServer(w.cfg).Deliver(context.Background(), target, msg(t, "hi"))
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
		assert.Contains(t, r.Detail, "thread is archived")
	})
	t.Run("the daemon let the thread go", func(t *testing.T) {
		w.fake.Handle("thread/loaded/list", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": []string{}}, "", true
		})
		resumes := func() (n int) {
			for _, m := range w.fake.Got() {
				if m.Method == "thread/resume" {
					n++
				}
			}
			return n
		}
		before := resumes()
		_, err := NewAppServer(w.cfg).Deliver(context.Background(), target, msg(t, "hi"))
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
		assert.Equal(t, before, resumes(), "nothing resumed: a resume would load it with no one watching")
	})
	t.Run("another harness's session", func(t *testing.T) {
		other := session(t, domain.Record{PID: 1, SessionID: "s", Name: "n", SocketPath: "/s.sock", Kind: domain.KindInteractive})
		_, err := NewAppServer(w.cfg).Deliver(context.Background(), other, msg(t, "hi"))
		r, _ := domain.AsRefusal(err)
		require.NotNil(t, r)
		assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
	})
	t.Run("a --no-daemon TUI", func(t *testing.T) {
		rec := target.Record()
		rec.Kind = KindNoDaemon
		_, err := NewAppServer(w.cfg).Deliver(context.Background(), session(t, rec), msg(t, "hi"))
		assert.ErrorContains(t, err, "--transport queue")
	})
}

func TestCourierHearsTheTurnsAnswer(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	turnServer(w, "idle", "the answer")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := NewAppServer(w.cfg).StartCourier(ctx)
	require.NoError(t, err)
	defer c.Close()
	target := session(t, w.read(t)[threadA].Record)
	rec, err := c.Send(ctx, target, msg(t, "q"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome)
	select {
	case in := <-c.Inbound():
		assert.Equal(t, "the answer", in.Text)
		assert.True(t, in.IsReplyFrom(target))
	case <-ctx.Done():
		t.Fatal("no reply")
	}
	require.NoError(t, c.Close())
	<-c.Done()
}

func msg(t *testing.T, text string) domain.Message {
	t.Helper()
	m, err := domain.NewMessage(text)
	require.NoError(t, err)
	return m
}

// A thread the daemon holds loaded before thread/list shows its row (the
// row is written a moment after the rollout) is placed by its rollout's
// session_meta: with a client in its folder it is live, not headless.
func TestRegistryLoadedBeforeItsRow(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	w.fake.Handle("thread/loaded/list", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
		return map[string]any{"data": []string{threadA, threadB}}, "", true
	})
	day := filepath.Join(w.fake.Home, "sessions", "2026", "12", "02")
	require.NoError(t, os.MkdirAll(day, 0o755))
	rollout := filepath.Join(day, "rollout-2026-12-02T03-41-00-"+threadB+".jsonl")
	require.NoError(t, os.WriteFile(rollout, []byte(`{"type":"session_meta","payload":{"id":"`+threadB+`","cwd":"/w/b","cli_version":"0.171.0"}}`+"\n"), 0o644))
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/b", filepath.Join(w.fake.Home, "state_5.sqlite"))
	got := w.read(t)[threadB]
	assert.Equal(t, domain.VerdictLive, got.Verdict, got.Reason)
	assert.Equal(t, 200, got.Record.PID)
	assert.Equal(t, "/w/b", got.Record.Cwd)
	assert.Equal(t, rollout, got.Record.Path)
}

// A headless `codex exec` run holds its thread's writer lock and rollout
// as a --no-daemon TUI does; it is no session (issue 28, case 2): listed
// headless with the reason, never live.
func TestRegistryExecRunIsHeadless(t *testing.T) {
	w := newWorld(t, map[string]string{})
	locks, day := lockedHome(t, w.fake.Home)
	rollout := filepath.Join(day, "rollout-2026-12-02T03-40-51-"+threadN+".jsonl")
	require.NoError(t, os.WriteFile(rollout, []byte(`{"timestamp":"x","type":"session_meta","payload":{"id":"`+threadN+`","timestamp":"2026-12-02T03:40:51.123Z","cwd":"/w/ex","cli_version":"0.171.0"}}`+"\n"), 0o644))
	fakeProc(t, w.procRoot, 410, []string{"codex", "exec", "say hi"}, "/w/ex", filepath.Join(locks, threadN+".lock"), rollout)

	got := w.read(t)
	e, ok := got[threadN]
	require.True(t, ok, "the exec run's thread is listed (under --all)")
	assert.Equal(t, domain.VerdictHeadless, e.Verdict)
	assert.False(t, e.Live())
	assert.Contains(t, e.Reason, "codex exec")
	assert.Equal(t, 410, e.Record.PID)
	assert.Equal(t, "exec", e.Record.Kind, "its own kind, not no-daemon's")
	assert.False(t, e.Addressable)
}

// A CODEX_HOME behind a symlink: a --no-daemon TUI's open files are named
// by the real path, and it is found all the same (issue 28, case 5).
func TestScanProcsThroughASymlinkedHome(t *testing.T) {
	real := filepath.Join(t.TempDir(), "real-codex")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "thread-writer-locks"), 0o755))
	link := filepath.Join(t.TempDir(), "codex-home")
	require.NoError(t, os.Symlink(real, link))
	procRoot := t.TempDir()
	fakeProc(t, procRoot, 420, []string{"codex", "--no-daemon"}, "/w/nd", filepath.Join(real, "thread-writer-locks", threadN+".lock"))
	procs := scanProcs(procliveness.NewTable(procRoot), link)
	require.Len(t, procs, 1)
	assert.Equal(t, []string{threadN}, procs[0].locks)
	assert.Equal(t, KindNoDaemon, procs[0].role(0))
}

// A TUI that quit while the daemon runs a tool call for its thread: the
// sandbox helpers (named codex, in the thread's folder, of this home) are
// the daemon's descendants, not clients, so the thread is headless (issue
// 28, case 6).
func TestDaemonDescendantsAreNoClients(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	home := filepath.Join(w.fake.Home, "state_5.sqlite")
	fakeProc(t, w.procRoot, 300, []string{"codex", "--codex-run-as-linux-sandbox"}, "/w/a", home)
	fakeProc(t, w.procRoot, 301, []string{"codex", "--codex-run-as-linux-sandbox"}, "/w/a", home)
	setParent(t, w.procRoot, 300, 100) // the daemon's child
	setParent(t, w.procRoot, 301, 300) // and its grandchild
	got := w.read(t)
	assert.Equal(t, domain.VerdictHeadless, got[threadA].Verdict, "the daemon's helpers hold no thread open")

	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", home)
	got = w.read(t)
	assert.Equal(t, domain.VerdictLive, got[threadA].Verdict, "a TUI of its own (parent 1) is a client")
	assert.Equal(t, 200, got[threadA].Record.PID)
}

// setParent rewrites the fake /proc/<pid>/stat's ppid.
func setParent(t *testing.T, root string, pid, ppid int) {
	t.Helper()
	stat := fmt.Sprintf("%d (codex) S %d %d %d 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0", pid, ppid, pid, pid, 1000+pid)
	require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprint(pid), "stat"), []byte(stat), 0o644))
}

// lockedHome makes home's thread-writer-locks folder and a day's sessions
// folder, and returns both.
func lockedHome(t *testing.T, home string) (locks, day string) {
	t.Helper()
	locks = filepath.Join(home, "thread-writer-locks")
	day = filepath.Join(home, "sessions", "2026", "12", "02")
	require.NoError(t, os.MkdirAll(locks, 0o755))
	require.NoError(t, os.MkdirAll(day, 0o755))
	return locks, day
}

// Ctrl-C or SIGTERM (the context canceled) after turn/start named the
// turn and before turn/started is outcome_unknown, never posted (issue
// 28, questionable points).
func TestAppServerInterruptedAfterTheHandOver(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.fake.Handle("thread/resume", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
		return map[string]any{"thread": map[string]any{"id": threadA, "status": map[string]any{"type": "idle"}}}, "", true
	})
	w.fake.Handle("turn/start", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
		time.AfterFunc(100*time.Millisecond, cancel) // the signal, while the receipt is awaited
		return map[string]any{"turn": map[string]any{"id": "turn-1", "status": "inProgress", "items": []any{}}}, "", true
	})
	w.cfg.Window = 20 * time.Second
	_, err := NewAppServer(w.cfg).Deliver(ctx, target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "interrupted after Codex accepted the message")
}

// A daemon that does not answer is asked once: the registry's second read,
// Known and the transport's dial fail at once, naming it, instead of each
// waiting out the bound (issue 28: three connections cost a send 9 s).
func TestUnresponsiveDaemonIsAskedOnce(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	w.fake.Handle("thread/loaded/list", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false })
	w.reg.ask = 300 * time.Millisecond
	w.cfg.memo = w.reg.memo
	snap, err := w.reg.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Unread, 1)

	start := time.Now()
	snap, err = w.reg.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Unread, 1)
	assert.Contains(t, snap.Unread[0].Err.Error(), "not asked again")
	_, err = w.reg.Known(context.Background())
	require.Error(t, err)
	target := domain.NewDormantSession(domain.Record{Harness: Kind, SessionID: threadA, SocketPath: w.fake.Socket})
	_, err = NewAppServer(w.cfg).Deliver(context.Background(), target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "nothing was sent")
	assert.Less(t, time.Since(start), 250*time.Millisecond, "no second wait")
	inits := 0
	for _, m := range w.fake.Got() {
		if m.Method == "initialize" {
			inits++
		}
	}
	assert.Equal(t, 1, inits, "one connection")

	// After memoHold it is asked again.
	w.reg.memo.now = func() time.Time { return time.Now().Add(memoHold + time.Second) }
	snap, err = w.reg.Read(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, snap.Unread[0].Err.Error(), "not asked again")
}

// The transport's handshake is bounded by DefaultAsk, not the delivery's
// whole timeout.
func TestAppServerDialIsBounded(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	w.fake.Handle("initialize", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false })
	w.cfg.Timeout = 30 * time.Second
	start := time.Now()
	_, err := NewAppServer(w.cfg).Deliver(context.Background(), target, msg(t, "hi"))
	require.Error(t, err)
	assert.Less(t, time.Since(start), DefaultAsk+2*time.Second)
}

// Ctrl-C or SIGTERM before turn/start is delivery_failed saying it was
// interrupted and nothing was sent.
func TestAppServerInterruptedBeforeTheHandOver(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	fakeProc(t, w.procRoot, 200, []string{"codex"}, "/w/a", filepath.Join(w.fake.Home, "state_5.sqlite"))
	target := session(t, w.read(t)[threadA].Record)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.fake.Handle("thread/resume", func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
		time.AfterFunc(100*time.Millisecond, cancel)
		return nil, "", false // no answer: the signal comes while it is awaited
	})
	_, err := NewAppServer(w.cfg).Deliver(ctx, target, msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "interrupted before the message was handed over")
	for _, m := range w.fake.Got() {
		assert.NotEqual(t, "turn/start", m.Method)
	}
}
