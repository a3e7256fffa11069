//go:build unix

package acceptance

import (
	"bytes"
	"fmt"
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

	"github.com/peerctl/peerctl/test/livecodex"
	"github.com/peerctl/peerctl/test/testproc"
)

// Issue 28 ("Codex, told true") against the real Codex 0.171.0 with the
// stand-in model. The three tests run in parallel: each has a home of
// its own.

// waitListed polls `list --all --json --harness codex` until cond holds for
// thread id's entry, and returns that entry; it fails after codexTurn.
func waitListed(t *testing.T, env []string, id, what string, cond func(codexListed) bool) codexListed {
	t.Helper()
	deadline := time.Now().Add(codexTurn)
	for {
		l, ok := findListed(listCodex(t, env, "--all", "--harness", "codex"), id)
		if ok && cond(l) {
			return l
		}
		require.True(t, time.Now().Before(deadline), "%s: thread %s listed as %+v (listed: %v)", what, id, l, ok)
		time.Sleep(200 * time.Millisecond)
	}
}

// TestLiveCodexNoDaemonHome (case 1): a --no-daemon TUI in a home where no
// daemon ever ran is listed live and addressable, its endpoint ends in
// :queue, its name is its first message, the default transport refuses it
// naming --transport queue, and
// `send --transport queue` (by id and by endpoint) runs a turn in it, the
// receipt saying it runs now.
func TestLiveCodexNoDaemonHome(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	a := livecodex.Start(t, root, livecodex.Options{Label: "nd", Args: []string{"--no-daemon"}, Prompt: "ping nd-first"})
	a.WaitRollout(t, "the first turn's end", codexTurn, turnEndedAfter("pong: ping nd-first"))
	require.Zero(t, root.DaemonPID(), "no daemon ever ran in this home")
	_, err := os.Lstat(root.CodexHome + "/app-server-control/app-server-control.sock")
	require.ErrorIs(t, err, os.ErrNotExist, "no control socket")
	env := root.Env()

	l, ok := findListed(listCodex(t, env, "--harness", "codex"), a.ThreadID)
	require.True(t, ok, "thread %s not listed", a.ThreadID)
	assert.Equal(t, "live", l.Verdict)
	assert.True(t, l.Addressable, "%+v", l)
	assert.Equal(t, a.PID, l.PID)
	assert.Equal(t, fmt.Sprintf("codex-peer:v1:%d:%s:queue", a.PID, a.ThreadID), l.Endpoint)
	assert.Equal(t, "ping nd-first", l.Name, "its first message, as the daemon's thread/list names a thread")

	refused, r := sendCodex(t, env, a.ThreadID, "ping nd-default")
	assert.NotEqual(t, 0, r.Code)
	assert.Equal(t, "harness_unsupported", refused.Refusal.Reason, "stderr: %s", r.Stderr)
	assert.Contains(t, refused.Refusal.Detail, "--transport queue")

	out, r := sendCodex(t, env, "--transport", "queue", a.ThreadID, "ping nd-q1")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	assert.Contains(t, out.Detail, "it runs now", "an idle TUI runs it at once")
	a.WaitRollout(t, "the queued turn's end", codexTurn, turnEndedAfter("pong: ping nd-q1"))

	out, r = sendCodex(t, env, "--transport", "queue", l.Endpoint, "ping nd-q2")
	require.Equal(t, 0, r.Code, "by endpoint; stderr: %s", r.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	a.WaitRollout(t, "the turn sent by endpoint", codexTurn, hasAgentMessage("pong: ping nd-q2"))
	assert.Zero(t, root.DaemonPID(), "peerctl started no daemon")
}

// TestLiveCodexDaemonKilled (case 4): kill -9 the daemon with a
// daemon-mode TUI and a --no-daemon TUI alive: list exits 0 and shows the
// --no-daemon TUI live (a warning says the daemon is not running), and a
// queue send to it runs.
func TestLiveCodexDaemonKilled(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	d := livecodex.Start(t, root, livecodex.Options{Label: "d", Prompt: "ping dk-d"})
	n := livecodex.Start(t, root, livecodex.Options{Label: "n", Args: []string{"--no-daemon"}, Prompt: "ping dk-n"})
	d.WaitRollout(t, "the daemon TUI's first answer", codexTurn, hasAgentMessage("pong: ping dk-d"))
	n.WaitRollout(t, "the --no-daemon TUI's first turn's end", codexTurn, turnEndedAfter("pong: ping dk-n"))
	daemon := root.DaemonPID()
	require.NotZero(t, daemon)
	require.NoError(t, syscall.Kill(daemon, syscall.SIGKILL))
	for deadline := time.Now().Add(30 * time.Second); root.DaemonPID() == daemon; {
		require.True(t, time.Now().Before(deadline), "daemon %d still runs after SIGKILL", daemon)
		time.Sleep(50 * time.Millisecond)
	}
	env := root.Env()

	r := runPeerctl(t, runOpts{Env: env}, "list", "--json", "--harness", "codex")
	require.Equal(t, 0, r.Code, "a dead daemon is a warning; stderr: %s", r.Stderr)
	if root.DaemonPID() == 0 { // no client started a new daemon meanwhile
		assert.Contains(t, string(r.Stderr), "daemon is not running")
	} else {
		t.Logf("a client started a new daemon (pid %d) before the list: the warning is not checked", root.DaemonPID())
	}
	l := waitListed(t, env, n.ThreadID, "the --no-daemon TUI", func(l codexListed) bool { return l.Verdict == "live" })
	assert.True(t, l.Addressable, "%+v", l)

	out, sr := sendCodex(t, env, "--transport", "queue", n.ThreadID, "ping dk-q")
	require.Equal(t, 0, sr.Code, "stderr: %s", sr.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	n.WaitRollout(t, "the queued turn", codexTurn, hasAgentMessage("pong: ping dk-q"))
}

// TestLiveCodexHeadlessWindow (case 3): a TUI quit, the daemon still holds
// its thread (headless): `send --transport queue` is refused not_live,
// saying the text would run now unseen and what to do, and nothing runs;
// once the daemon let the thread go a queue send is queued for the next
// codex resume, the receipt saying so.
func TestLiveCodexHeadlessWindow(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	h := livecodex.Start(t, root, livecodex.Options{Label: "h", Prompt: "ping hw-first"})
	h.WaitRollout(t, "the first turn's end", codexTurn, turnEndedAfter("pong: ping hw-first"))
	env := root.Env()
	h.Quit()
	waitListed(t, env, h.ThreadID, "the daemon's afterglow", func(l codexListed) bool { return l.Verdict == "headless" })

	probe := fmt.Sprintf("ping hw-%d", time.Now().UnixNano())
	out, r := sendCodex(t, env, "--transport", "queue", h.ThreadID, probe)
	assert.Equal(t, 3, r.Code, "not_live; stderr: %s", r.Stderr)
	assert.Equal(t, "not_live", out.Refusal.Reason)
	assert.Contains(t, out.Refusal.Detail, "would run now, in the daemon, with no one watching")
	assert.Contains(t, out.Refusal.Detail, "codex resume "+h.ThreadID)
	// Once the daemon let the thread go (about a minute), nothing ran the
	// refused text (queued, Codex ran it within a second), and the queue
	// keeps a message for the next codex resume, saying so.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if _, ok := findListed(listCodex(t, env, "--all", "--harness", "codex"), h.ThreadID); !ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "the daemon still holds thread %s", h.ThreadID)
		time.Sleep(time.Second)
	}
	for _, req := range root.Model.Requests() {
		assert.False(t, strings.Contains(req.LastUserText(), probe), "the refused text reached the model")
	}
	out, r = sendCodex(t, env, "--transport", "queue", h.ThreadID, "ping hw-later")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	assert.Contains(t, out.Detail, "runs when the thread is resumed (codex resume "+h.ThreadID+")")
}

// TestLiveCodexDaemonStopped (issue 28's questionable points, issue 41):
// a daemon that takes connections and never answers (SIGSTOP) is asked
// once per send, not three times (the refusal says the second ask was
// not made), `list --harness claude-code` does not read Codex at all (no
// warning), and a queue send to a --no-daemon TUI's thread is
// delivery_failed saying the daemon (its pid) does not answer and is
// stopped, codex queue not run (it waited about 10 s and failed, its
// backtrace in the words: "7: <unknown>"). Then the daemon is killed
// while its TUI still shows the thread: a send by id or endpoint is
// not_live naming that TUI, its daemon gone, and what to do, never "no
// process has it open". One daemon, two TUIs.
func TestLiveCodexDaemonStopped(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	s := livecodex.Start(t, root, livecodex.Options{Label: "s", Prompt: "ping ds-first"})
	n := livecodex.Start(t, root, livecodex.Options{Label: "n", Args: []string{"--no-daemon"}, Prompt: "ping ds-n"})
	s.WaitRollout(t, "the first answer", codexTurn, hasAgentMessage("pong: ping ds-first"))
	n.WaitRollout(t, "the --no-daemon TUI's first turn's end", codexTurn, turnEndedAfter("pong: ping ds-n"))
	env := root.Env()
	live := waitListed(t, env, s.ThreadID, "the daemon TUI's thread", func(l codexListed) bool { return l.Verdict == "live" })
	daemon := root.DaemonPID()
	require.NotZero(t, daemon)
	require.NoError(t, syscall.Kill(daemon, syscall.SIGSTOP))
	killed := false
	t.Cleanup(func() { // before the root's StopDaemon
		if !killed {
			_ = syscall.Kill(daemon, syscall.SIGCONT)
		}
	})

	r := runPeerctl(t, runOpts{Env: env}, "list", "--harness", "claude-code")
	assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.NotContains(t, string(r.Stderr), "codex", "the Codex daemon was not asked")

	silent := fmt.Sprintf("the Codex app-server daemon (pid %d) does not answer: it took the connection on ", daemon)
	stopped := fmt.Sprintf("the process is stopped (state T: SIGSTOP, Ctrl-Z or a debugger): `kill -CONT %d` resumes it", daemon)
	out, r := sendCodex(t, env, "--transport", "queue", s.ThreadID, "ping rx-stopped")
	assert.Equal(t, 3, r.Code, "not_live; stderr: %s", r.Stderr)
	assert.Contains(t, out.Refusal.Detail, "the codex registry could not be read")
	assert.Contains(t, out.Refusal.Detail, silent)
	assert.Contains(t, out.Refusal.Detail, stopped)
	assert.Contains(t, out.Refusal.Detail, "not asked again", "one ask: the known threads were not asked for again")

	out, r = sendCodex(t, env, "--transport", "queue", n.ThreadID, "ping rx-nq")
	assert.Equal(t, 5, r.Code, "delivery_failed; stderr: %s", r.Stderr)
	assert.Equal(t, "delivery_failed", out.Refusal.Reason)
	assert.Contains(t, out.Refusal.Detail, silent)
	assert.Contains(t, out.Refusal.Detail, stopped)
	assert.Contains(t, out.Refusal.Detail, "codex queue would wait for it and fail, so it was not run; nothing was sent")
	for _, residue := range []string{"<unknown>", "backtrace", "failed to", "context deadline exceeded"} {
		assert.NotContains(t, out.Refusal.Detail, residue)
	}

	// Killed while stopped (a stopped process takes SIGKILL): TUI s keeps
	// showing its thread, reconnecting, and takes nothing.
	require.NoError(t, syscall.Kill(daemon, syscall.SIGKILL))
	killed = true
	for deadline := time.Now().Add(30 * time.Second); root.DaemonPID() == daemon; {
		require.True(t, time.Now().Before(deadline), "daemon %d still runs after SIGKILL", daemon)
		time.Sleep(50 * time.Millisecond)
	}
	l := waitListed(t, env, s.ThreadID, "the thread its TUI still shows", func(l codexListed) bool { return l.PID == s.PID })
	if root.DaemonPID() != 0 {
		t.Skipf("a client started a new daemon (pid %d): the daemon-gone words are not checked", root.DaemonPID())
	}
	assert.Equal(t, "stale", l.Verdict, "%+v", l)
	assert.Contains(t, l.Reason, fmt.Sprintf("Codex TUI pid %d", s.PID))
	tui := fmt.Sprintf("Codex TUI pid %d may still show it, but the app-server daemon it ran on is gone", s.PID)
	resume := fmt.Sprintf("quit that TUI and run `codex resume %s` in %s", s.ThreadID, s.Cwd)
	for _, args := range [][]string{{s.ThreadID}, {"--transport", "queue", s.ThreadID}} {
		out, r = sendCodex(t, env, append(args, "ping rx-gone")...)
		assert.Equal(t, 3, r.Code, "%v: not_live; stderr: %s", args, r.Stderr)
		assert.Equal(t, "not_live", out.Refusal.Reason, "%v", args)
		assert.Contains(t, out.Refusal.Detail, tui, "%v", args)
		assert.Contains(t, out.Refusal.Detail, resume, "%v", args)
		assert.NotContains(t, out.Refusal.Detail, "no process has it open", "%v", args)
	}
	out, r = sendCodex(t, env, live.Endpoint, "ping rx-gone")
	assert.Equal(t, 3, r.Code, "by endpoint: not_live; stderr: %s", r.Stderr)
	assert.Contains(t, out.Refusal.Detail, fmt.Sprintf("endpoint pid %d", s.PID))
	assert.Contains(t, out.Refusal.Detail, "Reconnecting to server")
	for _, req := range root.Model.Requests() {
		assert.NotContains(t, req.LastUserText(), "rx-", "a refused text reached the model")
	}
}

// TestLiveCodexExecRun (case 2): a `codex exec` run holds its thread's
// writer lock and rollout as a --no-daemon TUI does: it is listed under
// --all as headless, kind exec, with the run's pid, not live, and a queue send to it
// is refused naming the exec run (it would never be seen).
func TestLiveCodexExecRun(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	cwd := filepath.Join(root.Dir, "w", "exec")
	require.NoError(t, os.MkdirAll(cwd, 0o700))
	cmd := exec.Command(root.Bin, "exec", "--skip-git-repo-check", "hold exec-run")
	cmd.Env, cmd.Dir = root.Env(), cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testproc.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		root.Model.ReleaseAll()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	for deadline := time.Now().Add(codexTurn); !root.Model.Held("exec-run"); {
		require.True(t, time.Now().Before(deadline), "the exec's turn reached the model; output:\n%s", out.String())
		time.Sleep(50 * time.Millisecond)
	}
	var l codexListed
	for deadline := time.Now().Add(codexTurn); ; {
		all := listCodex(t, root.Env(), "--all", "--harness", "codex")
		if i := slices.IndexFunc(all, func(l codexListed) bool { return l.PID == cmd.Process.Pid }); i >= 0 {
			l = all[i]
			break
		}
		require.True(t, time.Now().Before(deadline), "the exec's thread is listed under --all")
		time.Sleep(200 * time.Millisecond)
	}
	assert.Equal(t, "headless", l.Verdict, "%+v", l)
	assert.Equal(t, "exec", l.Kind, "its own kind, not no-daemon's")
	assert.Contains(t, l.Reason, "codex exec")
	assert.False(t, l.Addressable)
	assert.Empty(t, listCodex(t, root.Env(), "--harness", "codex"), "nothing live")

	sent, r := sendCodex(t, root.Env(), "--transport", "queue", l.SessionID, "ping exec-q")
	assert.Equal(t, 3, r.Code, "not_live; stderr: %s", r.Stderr)
	assert.Equal(t, "not_live", sent.Refusal.Reason)
	assert.Contains(t, sent.Refusal.Detail, "codex exec")
	root.Model.Release("exec-run")
	select {
	case err := <-done:
		done <- err
		require.NoError(t, err, "output:\n%s", out.String())
	case <-time.After(codexTurn):
		t.Fatalf("codex exec did not end after its turn; output:\n%s", out.String())
	}
	assert.Contains(t, out.String(), "held exec-run", "the exec printed its own answer")
}

// TestLiveCodexSymlinkedHome (case 5): a --no-daemon TUI whose CODEX_HOME
// is a link to the home (its open files are named by the real path) is
// listed live and takes a queue send, the home named by the link.
func TestLiveCodexSymlinkedHome(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	linked := *root
	linked.CodexHome = filepath.Join(root.Dir, "ch-link")
	require.NoError(t, os.Symlink(root.CodexHome, linked.CodexHome))
	s := livecodex.Start(t, &linked, livecodex.Options{Label: "sl", Args: []string{"--no-daemon"}, Prompt: "ping sl-first"})
	s.WaitRollout(t, "the first turn's end", codexTurn, turnEndedAfter("pong: ping sl-first"))
	env := linked.Env()
	l, ok := findListed(listCodex(t, env, "--harness", "codex"), s.ThreadID)
	require.True(t, ok, "thread %s not listed", s.ThreadID)
	assert.Equal(t, "live", l.Verdict)
	assert.Equal(t, s.PID, l.PID)
	out, r := sendCodex(t, env, "--transport", "queue", s.ThreadID, "ping sl-q")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	s.WaitRollout(t, "the queued turn", codexTurn, hasAgentMessage("pong: ping sl-q"))
}

// TestLiveCodexSandboxHelpersAreNoClients (case 6): the TUI quits while
// the daemon runs a tool call for its thread (a sleep, under Codex's
// sandbox helpers: processes named codex, in the thread's folder, of this
// home, the daemon's descendants): within 10 s the thread is no longer
// listed live, while the tool still runs, and a send to it is refused.
func TestLiveCodexSandboxHelpersAreNoClients(t *testing.T) {
	t.Parallel()
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	s := livecodex.Start(t, root, livecodex.Options{Label: "sb", Prompt: "ping sb-first"})
	s.WaitRollout(t, "the first answer", codexTurn, hasAgentMessage("pong: ping sb-first"))
	var call string
	for _, req := range root.Model.Requests() {
		if _, _, ok := req.FindTool("exec_command"); ok {
			call = `call exec_command {"cmd":"sleep 45"}`
		} else if _, _, ok := req.FindTool("shell"); ok && call == "" {
			call = `call shell {"command":["sleep","45"]}`
		}
	}
	require.NotEmpty(t, call, "Codex offered a shell tool")
	env := root.Env()
	_, r := sendCodex(t, env, s.ThreadID, call)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	daemon := root.DaemonPID()
	var sleeper int
	for deadline := time.Now().Add(codexTurn); sleeper == 0; {
		sleeper = descendantRunning(daemon, "sleep")
		require.True(t, time.Now().Before(deadline), "the tool's sleep runs under the daemon; screen:\n%s", s.Screen())
		time.Sleep(100 * time.Millisecond)
	}
	s.Quit()
	quit := time.Now()
	for {
		l, ok := findListed(listCodex(t, env, "--all", "--harness", "codex"), s.ThreadID)
		if !ok || l.Verdict != "live" {
			break
		}
		require.Less(t, time.Since(quit), 10*time.Second, "still listed live: %+v", l)
		time.Sleep(200 * time.Millisecond)
	}
	assert.NoError(t, syscall.Kill(sleeper, 0), "the tool still ran when the thread stopped being live")
	sent, r := sendCodex(t, env, s.ThreadID, "ping sb-after")
	assert.Equal(t, 3, r.Code, "not_live; stderr: %s", r.Stderr)
	assert.Equal(t, "not_live", sent.Refusal.Reason, "%+v", sent)
	assert.False(t, sent.OK)
}

// descendantRunning is the pid of a process named comm whose ancestry
// reaches pid, 0 when there is none.
func descendantRunning(pid int, comm string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		for q, n := p, 0; q > 1 && n < 64; n++ {
			if q == pid {
				return p
			}
			q = parentOf(q)
		}
	}
	return 0
}

// parentOf is field 4 of /proc/<pid>/stat (0 when unknown).
func parentOf(pid int) int {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
