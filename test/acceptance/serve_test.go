//go:build unix

package acceptance

// peerctl serve, send --durable and outbox end to end, hermetic: the fake
// claude as the (warm) courier, recording listeners as sessions' sockets,
// a state and runtime folder of the test's own.

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// serveWorld is a sendWorld with the service's folders.
type serveWorld struct {
	sendWorld
	state, run string
	srv        *exec.Cmd // a service startServe started
	more       []string  // variables added to env's
}

func newServeWorld(t *testing.T) serveWorld {
	w := serveWorld{sendWorld: newSendWorld(t, false), state: t.TempDir(), run: catSocketDir(t)}
	t.Cleanup(func() {
		w.stopServe(t)
		if log, err := os.ReadFile(filepath.Join(w.state, "peerctl", "serve.log")); err == nil && (t.Failed() || testing.Verbose()) {
			t.Logf("serve.log:\n%s", log)
		}
	})
	return w
}

func (w serveWorld) env(t testing.TB) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_CLAUDE=" + fakeClaudeBin(t),
		"FAKECLAUDE_RECORD=" + w.record, "FAKECLAUDE_SCENARIO=sent", "XDG_STATE_HOME=" + w.state, "XDG_RUNTIME_DIR=" + w.run}, w.more...)
}

// newServeWorldB is a serveWorld for a benchmark: a registry with no
// session yet.
func newServeWorldB(b testing.TB) serveWorld {
	config, sessions := catRegistry(b)
	w := serveWorld{sendWorld: sendWorld{config: config, sessions: sessions, record: b.TempDir()}, state: b.TempDir(), run: catSocketDir(b)}
	b.Cleanup(func() { w.stopServe(b) })
	return w
}

// startServe runs peerctl serve in a process group of its own (w.srv) and
// waits for its socket.
func (w *serveWorld) startServe(t testing.TB) { w.startServeWith(t) }

// startServeWith runs peerctl serve with args as startServe does, and
// returns what it writes on stderr.
func (w *serveWorld) startServeWith(t testing.TB, args ...string) *testproc.Buffer {
	w.srv = exec.Command(peerctlBin(t), append([]string{"serve"}, args...)...)
	w.srv.Env = w.env(t)
	log := &testproc.Buffer{}
	w.srv.Stderr = log
	w.srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.srv.Start(); err != nil {
		t.Fatal(err)
	}
	srv := w.srv
	t.Cleanup(func() { _ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL); _ = srv.Wait() })
	// Answering, not only there: a socket file exists from bind(2) on,
	// and a connect before listen(2) is refused (seen on a loaded machine).
	eventually(t, 30*time.Second, "the service's socket to take a connection", func() bool {
		conn, err := dialSocket(w.socket())
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	})
	return log
}

func (w serveWorld) peerctl(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	return catRun(t, w.sessions, runOpts{Env: w.env(t), Stdin: stdin}, append([]string{"--config-dir", w.config}, args...)...)
}

func (w serveWorld) db() string  { return filepath.Join(w.state, "peerctl", "outbox.db") }
func (w serveWorld) dir() string { return filepath.Join(w.state, "peerctl") }
func (w serveWorld) log() string { return filepath.Join(w.dir(), "serve.log") }

// socket is the service socket of w's state folder.
func (w serveWorld) socket() string {
	return filepath.Join(w.run, "peerctl", servesock.SocketName(w.dir()))
}

func (w serveWorld) lock() string { return filepath.Join(w.state, "peerctl", servesock.LockName) }

// servePID is the pid in the lock file of a running service (0: none).
func (w serveWorld) servePID(t testing.TB) int {
	l, err := servesock.TryLock(w.lock())
	if err == nil {
		_ = l.Release()
		return 0
	}
	b, err := os.ReadFile(w.lock())
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0 // a service starting: its pid is not written yet
	}
	return pid
}

// stopServe ends a running service with sig (SIGTERM by default) and
// waits until its lock is free.
func (w serveWorld) stopServe(t testing.TB, sig ...syscall.Signal) {
	pid := w.servePID(t)
	if pid == 0 {
		return
	}
	s := syscall.SIGTERM
	if len(sig) > 0 {
		s = sig[0]
	}
	_ = syscall.Kill(pid, s)
	eventually(t, 120*time.Second, "the service to end", func() bool { return w.servePID(t) == 0 })
}

// waitFor polls cond until it holds or d passes (then the test fails).
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	wait := 10 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for "+what)
		}
		time.Sleep(wait)
		wait = min(2*wait, 250*time.Millisecond)
	}
}

type outboxEntry struct {
	ID        int64  `json:"id"`
	Key       string `json:"key"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Address   string `json:"address"`
	Host      string `json:"host"`
	Text      string `json:"text"`
	MsgID     string `json:"msgId"`
	Transport string `json:"transport"`
	History   []struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"history"`
}

func (w serveWorld) outbox(t *testing.T, args ...string) []outboxEntry {
	t.Helper()
	r := w.peerctl(t, nil, append([]string{"outbox", "--json"}, args...)...)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out []outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s", r.Stdout)
	return out
}

func (w serveWorld) show(t *testing.T, id int64) outboxEntry {
	t.Helper()
	r := w.peerctl(t, nil, "outbox", "show", "--json", strconv.FormatInt(id, 10))
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s", r.Stdout)
	return out
}

type durableReceipt struct {
	OK      bool   `json:"ok"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
	MsgID   string `json:"msgId"`
	Outbox  struct {
		ID        int64  `json:"id"`
		State     string `json:"state"`
		Key       string `json:"key"`
		ExpiresAt string `json:"expiresAt"`
		Duplicate bool   `json:"duplicate"`
	} `json:"outbox"`
}

func decodeReceipt(t *testing.T, r result) durableReceipt {
	t.Helper()
	var got durableReceipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	return got
}

// addSession writes a live record named name whose socket is a new
// recording listener, and returns the listener.
func (w serveWorld) addSession(t *testing.T, name string) *socktest.Listener {
	pid := testproc.Sleeper(t)
	sock := filepath.Join(catSocketDir(t), "s.sock")
	l := socktest.Listen(t, sock, false)
	catWriteJSON(t, w.sessions, catFile(pid), catRecord(t, pid, name, sock))
	return l
}

// A durable send to a name two live sessions carry now is refused as a
// plain send is (identity_mismatch, exit 4, both candidates) and nothing is
// stored: kept, it would later go to whichever is left, a guess.
func TestServeDurableSendToAnAmbiguousName(t *testing.T) {
	w := newServeWorld(t)
	w.addSession(t, "alpha")
	w.addSession(t, "alpha")
	r := w.peerctl(t, nil, "send", "--durable=1h", "alpha", "hello")
	assert.Equal(t, 4, r.Code, "stdout: %s", r.Stdout)
	assert.Contains(t, string(r.Stderr), "identity_mismatch")
	assert.Equal(t, 2, strings.Count(string(r.Stderr), "candidate: "), "stderr: %s", r.Stderr)
	assert.Empty(t, w.outbox(t), "nothing stored")
}

func TestServeDurableSendToASessionThatComesLater(t *testing.T) {
	w := newServeWorld(t)
	r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "--key", "pr-7", "reviewer", "look at PR 7")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	assert.True(t, got.OK)
	assert.Equal(t, "stored", got.Outcome)
	assert.Equal(t, "stored", got.Outbox.State)
	assert.Equal(t, "pr-7", got.Outbox.Key)
	assert.Contains(t, got.Detail, "not_live")
	id := got.Outbox.ID
	require.NotZero(t, id)
	require.NotZero(t, w.servePID(t), "the durable send started the service")

	// The same key again: the first message, nothing new.
	r = w.peerctl(t, nil, "send", "--json", "--key", "pr-7", "reviewer", "look at PR 7")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	dup := decodeReceipt(t, r)
	assert.Equal(t, id, dup.Outbox.ID)
	assert.True(t, dup.Outbox.Duplicate)
	// The same key with another text: key_conflict, nothing stored.
	r = w.peerctl(t, nil, "send", "--json", "--key", "pr-7", "reviewer", "look at PR 7, again")
	assert.Equal(t, 14, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout)+string(r.Stderr), "key_conflict")
	assert.Len(t, w.outbox(t), 1)
	// Two more wait behind it: one address, delivered in order.
	var later []int64
	for _, text := range []string{"second in line", "third in line"} {
		r = w.peerctl(t, nil, "send", "--json", "--durable", "--no-confirm", "reviewer", text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		later = append(later, decodeReceipt(t, r).Outbox.ID)
	}

	// The session comes: the service delivers them, once each, in order.
	l := w.addSession(t, "reviewer")
	eventually(t, 60*time.Second, "the messages to be delivered", func() bool { return w.show(t, later[1]).State == "delivered" })
	assert.Equal(t, "delivered", w.show(t, id).State)
	frames := l.Wait(3)
	require.Len(t, frames, 3)
	for i, want := range []string{"look at PR 7", "second in line", "third in line"} {
		assert.Contains(t, string(frames[i]), want)
	}
	m := w.show(t, id)
	assert.NotEmpty(t, m.MsgID)
	var states []string
	for _, h := range m.History {
		states = append(states, h.State)
	}
	assert.Equal(t, "stored", states[0])
	assert.Equal(t, []string{"delivering", "delivered"}, states[len(states)-2:])
	r = w.peerctl(t, nil, "send", "--json", "--key", "pr-7", "reviewer", "look at PR 7")
	require.Equal(t, 0, r.Code)
	assert.Equal(t, "queued", decodeReceipt(t, r).Outcome, "a repeated key answers with the delivered message's receipt word")
	assert.Len(t, l.Frames(), 3, "never twice")

	// Text and filters.
	r = w.peerctl(t, nil, "outbox")
	require.Equal(t, 0, r.Code)
	assert.Contains(t, string(r.Stdout), "delivered")
	assert.Empty(t, w.outbox(t, "--state", "stored"))
	assert.Len(t, w.outbox(t, "--target", "reviewer"), 3)
	r = w.peerctl(t, nil, "outbox", "--state", "gone")
	assert.Equal(t, 2, r.Code)

	// The service's log says each delivery in one line, the reason after a colon.
	r = w.peerctl(t, nil, "serve", "stop")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	log, err := os.ReadFile(w.log())
	require.NoError(t, err)
	assert.Regexp(t, `peerctl serve: message `+strconv.FormatInt(id, 10)+` to "reviewer": delivered: \S`, string(log))
}

// A durable send to a session on a host that is down is stored
// (host_unreachable), kept for that host, and delivered once when the host
// answers again: through the far side's own peerctl, with its receipt.
func TestServeDurableSendToAHostThatIsDownThenUp(t *testing.T) {
	t.Parallel() // mostly waits: for a far side's hello, for a backoff
	w := newServeWorld(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	down := filepath.Join(t.TempDir(), "down")
	require.NoError(t, os.WriteFile(down, nil, 0o600))
	env := append(w.env(t), "PATH="+bin+":"+os.Getenv("PATH"), "CLAUDE_CONFIG_DIR="+w.config, "PEERCTL_SSH="+testbin.Build(t, testbin.FakeSSH),
		"FAKESSH_DOWN_WHILE="+down, "PEERCTL_HOST_TIMEOUT=10s")
	run := func(args ...string) result {
		t.Helper()
		return catRun(t, w.sessions, runOpts{Env: env}, args...)
	}
	r := run("send", "--json", "--durable=1h", "--host", "box", "--transport", "socket", "--no-confirm", w.id, "the far build broke")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	assert.Equal(t, "stored", got.Outcome)
	assert.Contains(t, got.Detail, "host_unreachable")
	id := got.Outbox.ID
	r = run("outbox", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var listed []outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &listed))
	require.Len(t, listed, 1)
	assert.Equal(t, "box", listed[0].Host)
	assert.Equal(t, w.id, listed[0].Address)
	r = run("outbox")
	assert.Contains(t, string(r.Stdout), "box: "+w.id[:10])
	assert.Empty(t, w.listener.Frames(), "nothing reached the session while its host was down")

	require.NoError(t, os.Remove(down))
	eventually(t, 60*time.Second, "the message to be delivered on box", func() bool {
		r := run("outbox", "show", "--json", strconv.FormatInt(id, 10))
		var m outboxEntry
		return r.Code == 0 && json.Unmarshal(r.Stdout, &m) == nil && m.State == "delivered"
	})
	frames := w.listener.Wait(1)
	require.Len(t, frames, 1)
	assert.Equal(t, "the far build broke", frameContent(t, frames[0]))
	r = run("outbox", "show", "--json", strconv.FormatInt(id, 10))
	var m outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &m))
	var states []string
	for _, h := range m.History {
		states = append(states, h.State)
	}
	// Each try while the host was down began delivering and handed nothing
	// over: stored again.
	assert.Equal(t, "stored", states[0])
	assert.Equal(t, []string{"delivering", "stored"}, slices.Compact(slices.Sorted(slices.Values(states[:len(states)-2]))), "%v", states)
	assert.Equal(t, []string{"delivering", "delivered"}, states[len(states)-2:])
	assert.Contains(t, m.History[1].Reason+m.History[2].Reason, "host_unreachable")
	time.Sleep(2 * time.Second)
	assert.Len(t, w.listener.Frames(), 1, "never twice")

	// The MCP tool too: send_message with host and durable_seconds.
	require.NoError(t, os.WriteFile(down, nil, 0o600))
	p := startMCP(t, env, "--config-dir", w.config, "mcp", "--confirm-timeout", "300ms")
	text, isErr := p.call(t, "send_message", map[string]any{"to": w.id, "host": "box", "text": "from the MCP tool", "durable_seconds": 3600, "transport": "socket"})
	require.False(t, isErr, text)
	var viaMCP durableReceipt
	require.NoError(t, json.Unmarshal([]byte(text), &viaMCP), text)
	assert.Equal(t, "stored", viaMCP.Outcome)
	require.NoError(t, os.Remove(down))
	eventually(t, 60*time.Second, "the MCP tool's message to be delivered on box", func() bool {
		r := run("outbox", "show", "--json", strconv.FormatInt(viaMCP.Outbox.ID, 10))
		var m outboxEntry
		return r.Code == 0 && json.Unmarshal(r.Stdout, &m) == nil && m.State == "delivered" && m.Host == "box"
	})
	frames = w.listener.Wait(2)
	require.Len(t, frames, 2)
	assert.Equal(t, "from the MCP tool", frameContent(t, frames[1]))
}

// A durable message for a session on another machine that has just
// started (its record shows no status yet: Claude Code would hold what is
// posted to it) is not handed over there either: the far peerctl, asked
// for a settled target, refuses it before anything is sent, the message
// stays stored, and it is delivered once the record shows a status.
func TestServeDurableSendToAHostWaitsForAStartingSessionToSettle(t *testing.T) {
	t.Parallel() // mostly waits: for a far side's hello, for a backoff
	w := newServeWorld(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	env := append(w.env(t), "PATH="+bin+":"+os.Getenv("PATH"), "CLAUDE_CONFIG_DIR="+w.config, "PEERCTL_SSH="+testbin.Build(t, testbin.FakeSSH),
		"PEERCTL_HOST_TIMEOUT=10s")
	pid := testproc.Sleeper(t)
	sock := filepath.Join(catSocketDir(t), "s.sock")
	l := socktest.Listen(t, sock, false)
	rec := catRecord(t, pid, "fresh", sock)
	delete(rec, "status")
	delete(rec, "updatedAt")
	rec["startedAt"] = time.Now().UnixMilli()
	catWriteJSON(t, w.sessions, catFile(pid), rec)

	r := catRun(t, w.sessions, runOpts{Env: env}, "send", "--json", "--durable=1h", "--host", "box", "--transport", "socket", "--no-confirm", "fresh", "once you are up")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	assert.Equal(t, "stored", got.Outcome)
	assert.Contains(t, got.Detail, "has just started and not settled")
	assert.Empty(t, l.Frames(), "nothing handed to a session still starting")

	rec["status"], rec["updatedAt"] = "idle", time.Now().UnixMilli()
	catWriteJSON(t, w.sessions, catFile(pid), rec)
	eventually(t, 60*time.Second, "the message to be delivered once the session settled", func() bool { return w.show(t, got.Outbox.ID).State == "delivered" })
	frames := l.Wait(1)
	require.Len(t, frames, 1)
	assert.Equal(t, "once you are up", frameContent(t, frames[0]))
}

// A host that hangs holds up no other target: while an attempt on it waits
// for the far side's hello, a message to a session here that comes back is
// delivered.
func TestServeAHangingHostHoldsUpNoOtherTarget(t *testing.T) {
	t.Parallel() // mostly waits: for a far side's hello, for a backoff
	w := newServeWorld(t)
	bin := t.TempDir()
	require.NoError(t, os.Symlink(peerctlBin(t), filepath.Join(bin, "peerctl")))
	hanging := append(w.env(t), "PATH="+bin+":"+os.Getenv("PATH"), "PEERCTL_SSH="+testbin.Build(t, testbin.FakeSSH), "FAKESSH_MODE=silent")
	r := catRun(t, w.sessions, runOpts{Env: hanging, Timeout: 2 * time.Minute}, "--config-dir", w.config,
		"send", "--json", "--durable=1h", "--host", "box", "--no-confirm", "proj-89", "for a host that hangs")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	far := decodeReceipt(t, r)
	require.Equal(t, "stored", far.Outcome, far.Detail)
	eventually(t, 60*time.Second, "the service's own attempt on the hanging host", func() bool { return w.show(t, far.Outbox.ID).State == "delivering" })

	r = w.peerctl(t, nil, "send", "--json", "--durable=1h", "--no-confirm", "later", "for a session here")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	here := decodeReceipt(t, r)
	require.Equal(t, "stored", here.Outcome)
	l := w.addSession(t, "later")
	eventually(t, 60*time.Second, "the message here to be delivered", func() bool { return w.show(t, here.Outbox.ID).State == "delivered" })
	assert.Len(t, l.Frames(), 1)
	assert.Equal(t, "delivering", w.show(t, far.Outbox.ID).State, "delivered while the attempt on the hanging host still waited")
}

func TestServeDurableSendToALiveSessionIsTheSameReceipt(t *testing.T) {
	w := newServeWorld(t)
	r := w.peerctl(t, nil, "send", "--json", "--durable", "--confirm-timeout", "300ms", w.id, "ship it")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	assert.Equal(t, "queued", got.Outcome)
	assert.NotEmpty(t, got.MsgID)
	assert.Equal(t, "delivered", got.Outbox.State)
	require.Len(t, w.listener.Wait(1), 1)
}

func TestServePlainSendGoesThroughTheWarmCourier(t *testing.T) {
	w := newServeWorld(t)
	w.startServe(t)
	srv := w.srv
	for i := range 3 {
		r := w.peerctl(t, nil, "send", "--json", "--confirm-timeout", "300ms", w.id, "warm "+strconv.Itoa(i))
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		got := decodeReceipt(t, r)
		assert.Equal(t, "queued", got.Outcome)
		assert.NotEmpty(t, got.MsgID)
		assert.Zero(t, got.Outbox.ID, "a plain send is not stored")
	}
	require.Len(t, w.listener.Wait(3), 3)
	argv, err := os.ReadFile(filepath.Join(w.record, "argv.json"))
	require.NoError(t, err)
	assert.NotEmpty(t, argv)
	pids, err := os.ReadFile(filepath.Join(w.record, "pid"))
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(pids)), "\n")+1, "one courier for three sends: %s", pids)

	// A second service for the same state is refused, clearly.
	r := w.peerctl(t, nil, "serve")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, string(r.Stderr), "another peerctl serve (pid "+strconv.Itoa(srv.Process.Pid)+")")

	// PEERCTL_SERVE=off: the send runs here (a courier of its own).
	env := append(w.env(t), "PEERCTL_SERVE=off")
	r = catRun(t, w.sessions, runOpts{Env: env}, "--config-dir", w.config, "send", "--json", "--confirm-timeout", "300ms", w.id, "cold")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	r = catRun(t, w.sessions, runOpts{Env: env}, "--config-dir", w.config, "send", "--durable", w.id, "cold")
	assert.Equal(t, 13, r.Code)
	assert.Contains(t, string(r.Stderr), "outbox_unavailable")
}

func TestServeCorruptDatabaseKeptAndReported(t *testing.T) {
	w := newServeWorld(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(w.db()), 0o700))
	junk := bytes.Repeat([]byte("this is not a database\n"), 300)
	require.NoError(t, os.WriteFile(w.db(), junk, 0o600))
	r := w.peerctl(t, nil, "send", "--json", "--durable", w.id, "keep me")
	assert.Equal(t, 13, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "outbox_unavailable")
	assert.Contains(t, string(r.Stderr), "outbox.db")
	assert.Contains(t, string(r.Stderr), "kept")
	assert.Empty(t, w.listener.Frames(), "nothing was sent")
	// A plain send still works (through the running service's warm courier).
	r = w.peerctl(t, nil, "send", "--json", "--confirm-timeout", "300ms", w.id, "plain")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	after, err := os.ReadFile(w.db())
	require.NoError(t, err)
	assert.Equal(t, junk, after, "the file is never overwritten")
	r = w.peerctl(t, nil, "outbox")
	assert.Equal(t, 13, r.Code)
}

func TestServeCancelAndRetry(t *testing.T) {
	w := newServeWorld(t)
	r := w.peerctl(t, nil, "send", "--json", "--durable", "nobody", "never mind")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	sid := strconv.FormatInt(id, 10)
	r = w.peerctl(t, nil, "outbox", "cancel", "--json", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "cancelled", w.show(t, id).State)
	r = w.peerctl(t, nil, "outbox", "cancel", sid)
	assert.Equal(t, 16, r.Code, "a message past cancelling is wrong_state, not a usage error")
	assert.Contains(t, string(r.Stderr), "peerctl: wrong_state: message "+sid+" is cancelled: only a stored message can be cancelled\n")
	assert.NotContains(t, string(r.Stderr), "--help")
	r = w.peerctl(t, nil, "outbox", "cancel", "--json", sid)
	assert.Equal(t, 16, r.Code)
	assert.Contains(t, string(r.Stdout), `"reason": "wrong_state"`)
	r = w.peerctl(t, nil, "outbox", "retry", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "stored", w.show(t, id).State)
	r = w.peerctl(t, nil, "outbox", "show", "99")
	assert.Equal(t, 15, r.Code, "an id the outbox does not hold is not_found, not a usage error")
	assert.Contains(t, string(r.Stderr), "peerctl: not_found: message 99 is not in the outbox")
	assert.NotContains(t, string(r.Stderr), "--help")
	r = w.peerctl(t, nil, "outbox", "cancel", "99")
	assert.Equal(t, 15, r.Code)
}

// The MCP tool send_message sends durably with a key: stored while the
// target is not there, the same key again is the same message, and the
// service delivers it once the session comes.
func TestServeMCPSendMessageDurableWithKey(t *testing.T) {
	w := newServeWorld(t)
	p := startMCP(t, w.env(t), "--config-dir", w.config, "mcp", "--confirm-timeout", "300ms")
	args := map[string]any{"to": "later", "text": "from the MCP tool", "key": "mcp-1", "durable_seconds": 3600}
	text, isErr := p.call(t, "send_message", args)
	require.False(t, isErr, text)
	var got durableReceipt
	require.NoError(t, json.Unmarshal([]byte(text), &got), text)
	assert.Equal(t, "stored", got.Outcome)
	assert.Equal(t, "mcp-1", got.Outbox.Key)
	text, isErr = p.call(t, "send_message", args)
	require.False(t, isErr, text)
	var again durableReceipt
	require.NoError(t, json.Unmarshal([]byte(text), &again), text)
	assert.Equal(t, got.Outbox.ID, again.Outbox.ID)
	assert.True(t, again.Outbox.Duplicate)
	l := w.addSession(t, "later")
	eventually(t, 60*time.Second, "the message to be delivered", func() bool { return w.show(t, got.Outbox.ID).State == "delivered" })
	assert.Len(t, l.Wait(1), 1)
	text, isErr = p.call(t, "send_message", map[string]any{"to": "later", "text": "x", "key": "k", "await_reply_seconds": 5})
	assert.True(t, isErr)
	assert.Contains(t, text, "await_reply_seconds")
}

// The service takes typed requests only (a send, an outbox change), never
// a command line: protocol 1's "run" with an argv is refused as a request
// it does not know, and so is the old protocol itself.
func TestServeRunsNoCommandLine(t *testing.T) {
	w := newServeWorld(t)
	w.startServe(t)
	ask := func(req map[string]any) (a struct {
		Error []byte `json:"error"`
		Code  int    `json:"code"`
		Done  bool   `json:"done"`
	}) {
		conn, err := dialSocket(w.socket())
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, json.NewEncoder(conn).Encode(req))
		require.NoError(t, json.NewDecoder(conn).Decode(&a))
		return a
	}
	a := ask(map[string]any{"v": 2, "op": "run", "argv": []string{"hosts", "add", "evil"}, "env": []string{"HOME=/"}})
	assert.Equal(t, 2, a.Code)
	assert.True(t, a.Done)
	assert.Contains(t, string(a.Error), `unknown request "run"`)
	a = ask(map[string]any{"v": 1, "op": "run", "argv": []string{"hosts", "add", "evil"}})
	assert.Equal(t, 1, a.Code)
	assert.Contains(t, string(a.Error), "the service speaks protocol 2")
}

func dialSocket(path string) (*net.UnixConn, error) {
	return net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
}

// watch prints outbox changes beside the session events.
func TestServeWatchPrintsOutboxEvents(t *testing.T) {
	w := newServeWorld(t)
	cmd := exec.Command(peerctlBin(t), "--config-dir", w.config, "watch", "--json")
	cmd.Env = w.env(t)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan map[string]any, 64)
	go func() {
		dec := json.NewDecoder(out)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	// The watch shows the outbox from its own start on: the send comes
	// after the watch has begun (its first line, the session already
	// live), however long the watch took to start.
	select {
	case m, ok := <-lines:
		require.True(t, ok, "watch ended")
		require.Equal(t, "appeared", m["event"], "%v", m)
	case <-time.After(60 * time.Second):
		require.FailNow(t, "watch printed nothing in 60 s")
	}
	r := w.peerctl(t, nil, "send", "--json", "--durable", "--no-confirm", "absent", "watch this")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	deadline := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-lines:
			require.True(t, ok, "watch ended")
			if m["event"] == "outbox" && m["messageId"] == float64(id) && m["state"] == "stored" {
				assert.Equal(t, "absent", m["address"])
				return
			}
		case <-deadline:
			require.FailNow(t, "no outbox event in 60 s")
		}
	}
}

// A relay request with "durable" and "key" is a durable send: stored
// while the target is not there, and the same key again is that message.
func TestServeRelayDurableWithKey(t *testing.T) {
	w := newServeWorld(t)
	line := `{"id":1,"to":"later","text":"from the relay","durable":3600,"key":"relay-1"}` + "\n"
	r := w.peerctl(t, []byte(line+strings.Replace(line, `"id":1`, `"id":2`, 1)), "relay", "--name", "ci-bot")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	require.Len(t, out, 3, "ready and two receipts: %s", r.Stdout)
	first, again := out[1], out[2]
	assert.Equal(t, "receipt", first["type"])
	assert.Equal(t, "stored", first["outcome"])
	ob := first["outbox"].(map[string]any)
	assert.Equal(t, ob["id"], again["outbox"].(map[string]any)["id"])
	assert.Equal(t, true, again["outbox"].(map[string]any)["duplicate"])
}

// send --durable --await-reply: the reply comes back as a plain
// --await-reply's, and the message's history says delivered, then replied
// with the reply's words; a message for a session that comes later is
// delivered and its reply recorded by the service alone.
func TestServeDurableSendAwaitsAReply(t *testing.T) {
	rw, _ := newReplyWorld(t, pong)
	w := serveWorld{sendWorld: rw, state: t.TempDir(), run: catSocketDir(t)}
	t.Cleanup(func() { w.stopServe(t) })
	r := w.peerctl(t, nil, "send", "--json", "--durable", "--await-reply=30s", "--no-confirm", w.id, "ping")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		OK     bool                  `json:"ok"`
		Reply  struct{ Text string } `json:"reply"`
		Outbox struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		} `json:"outbox"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.True(t, got.OK)
	assert.Equal(t, "pong: ping", got.Reply.Text)
	assert.Equal(t, "replied", got.Outbox.State)
	m := w.show(t, got.Outbox.ID)
	require.GreaterOrEqual(t, len(m.History), 2)
	assert.Equal(t, "delivered", m.History[len(m.History)-2].State)
	last := m.History[len(m.History)-1]
	assert.Equal(t, "replied", last.State)
	assert.Contains(t, last.Reason, "pong: ping")

	// To a session not there yet: stored, then delivered and answered.
	sock := filepath.Join(catSocketDir(t), "later.sock")
	r = w.peerctl(t, nil, "send", "--json", "--durable", "--await-reply=30s", "--no-confirm", "later", "are you there")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	assert.Equal(t, "stored", w.show(t, id).State)
	pid := testproc.Sleeper(t)
	startReplier(t, sock, "later", pong)
	catWriteJSON(t, w.sessions, catFile(pid), catRecord(t, pid, "later", sock))
	eventually(t, 90*time.Second, "the reply to be recorded", func() bool { return w.show(t, id).State == "replied" })
	assert.Contains(t, w.show(t, id).History[len(w.show(t, id).History)-1].Reason, "pong: are you there")
}
