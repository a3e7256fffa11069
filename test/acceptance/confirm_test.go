package acceptance

// The built binary against fake sessions (test/fakesession): confirmation
// from the transcript, send --wait, watch --json and enrich --json.

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

const fakeSessionPkg = "github.com/peerctl/peerctl/test/fakesession"

// bound limits every wait for something a test cued.
const bound = 15 * time.Second

type fake struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	pid   int
	id    string
}

// startFakeSession starts test/fakesession for configDir and waits until
// its record and socket exist.
func startFakeSession(t *testing.T, configDir, id, name string, flags ...string) *fake {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "pcs")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	args := append([]string{"-config", configDir, "-id", id, "-name", name,
		"-socket", filepath.Join(sockDir, name+".sock")}, flags...)
	cmd := exec.Command(testbin.Build(t, fakeSessionPkg), args...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		require.True(t, strings.HasPrefix(line, "ready "), "fake session said %q", line)
	case <-time.After(bound):
		t.Fatalf("fake session not ready within %s", bound)
	}
	return &fake{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid, id: id}
}

func (f *fake) say(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(f.stdin, line+"\n")
	require.NoError(t, err)
}

func (f *fake) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, f.cmd.Process.Signal(syscall.SIGKILL))
	_ = f.cmd.Wait()
}

func (f *fake) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, f.cmd.Process.Signal(syscall.SIGTERM))
	_ = f.cmd.Wait()
}

func configEnv(t *testing.T, configDir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + configDir}
}

type receipt struct {
	OK          bool   `json:"ok"`
	Outcome     string `json:"outcome"`
	Transport   string `json:"transport"`
	SessionID   string `json:"sessionId"`
	Confirmed   bool   `json:"confirmed"`
	Transcript  string `json:"transcript"`
	ConfirmedAt string `json:"confirmedAt"`
	ConfirmNote string `json:"confirmNote"`
	Wait        *struct {
		End       string `json:"end"`
		Status    string `json:"status"`
		ElapsedMs int64  `json:"elapsedMs"`
		Note      string `json:"note"`
		TakenUp   bool   `json:"takenUp"`
		TakenUpAt string `json:"takenUpAt"`
	} `json:"wait"`
	Refusal *struct {
		Reason   string `json:"reason"`
		ExitCode int    `json:"exitCode"`
		Detail   string `json:"detail"`
	} `json:"refusal"`
}

func TestSendConfirmation(t *testing.T) {
	const text = "rebase on main, \"then\" run the tests\n— thanks"
	cases := []struct {
		name      string
		flags     []string // the fake session's
		early     bool     // the same text already queued a second before the send
		args      []string // peerctl send's extra flags
		code      int
		outcome   string
		confirmed bool
		stderr    string
		quiet     bool // stderr carries no warning
	}{
		{"seen", nil, false, nil, 0, "delivered", true, "", false},
		{"not seen", []string{"-confirm=false"}, false, []string{"--confirm-timeout", "500ms"}, 0, "posted", false, "may still arrive", false},
		{"not seen, required", []string{"-confirm=false"}, false, []string{"--confirm-timeout", "500ms", "--require-confirm"}, 5, "", false, "delivery_failed", false},
		{"seen too early", []string{"-confirm=false"}, true, []string{"--confirm-timeout", "500ms"}, 0, "posted", false, "not confirmed", false},
		{"not asked", nil, false, []string{"--no-confirm"}, 0, "posted", false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := t.TempDir()
			f := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89", tc.flags...)
			transcript := filepath.Join(cfg, "projects", slugOf(filepath.Join(cfg, "cwd", "proj-89")), f.id+".jsonl")
			if tc.early {
				require.NoError(t, os.MkdirAll(filepath.Dir(transcript), 0o700))
				line, _ := json.Marshal(map[string]string{"type": "queue-operation", "operation": "enqueue",
					"timestamp": time.Now().Add(-time.Second).UTC().Format("2006-01-02T15:04:05.000Z"), "sessionId": f.id, "content": text})
				require.NoError(t, os.WriteFile(transcript, append(line, '\n'), 0o600))
			}
			args := append([]string{"send", "--transport", "socket", "--json"}, tc.args...)
			r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, append(args, "proj-89", text)...)
			assert.Equal(t, tc.code, r.Code, "stderr: %s", r.Stderr)
			assert.Contains(t, string(r.Stderr), tc.stderr)
			if tc.quiet {
				assert.NotContains(t, string(r.Stderr), "warning", "--no-confirm asked for no confirmation")
			}
			var got receipt
			require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
			if tc.code != 0 {
				require.NotNil(t, got.Refusal)
				assert.Equal(t, "delivery_failed", got.Refusal.Reason)
				assert.Equal(t, tc.code, got.Refusal.ExitCode)
				assert.Contains(t, got.Refusal.Detail, "handed to the transport and may still arrive", "a script must not resend blindly")
				return
			}
			assert.True(t, got.OK)
			assert.Equal(t, tc.outcome, got.Outcome)
			assert.Equal(t, tc.confirmed, got.Confirmed)
			assert.Equal(t, "socket", got.Transport)
			if tc.confirmed {
				assert.Equal(t, transcript, got.Transcript)
				at, err := time.Parse(time.RFC3339Nano, got.ConfirmedAt)
				require.NoError(t, err)
				assert.WithinDuration(t, time.Now(), at, time.Minute)
				assert.Empty(t, got.ConfirmNote)
			} else {
				assert.NotEmpty(t, got.ConfirmNote)
			}
		})
	}
}

func TestSendWaitUntilIdle(t *testing.T) {
	cfg := t.TempDir()
	startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89")
	// The confirmation window is as wide as the wait (the default 5 s is a
	// bound a loaded machine may pass before the fake writes its line).
	r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "send", "--transport", "socket", "--json", "--wait=30s", "--confirm-timeout=30s", "proj-89", "go")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got))
	assert.Equal(t, "delivered", got.Outcome)
	require.NotNil(t, got.Wait)
	assert.Equal(t, "idle", got.Wait.End)
	assert.Equal(t, "idle", got.Wait.Status)
	assert.NotEmpty(t, got.Wait.TakenUpAt, "the take-up line was found")
	assert.True(t, got.Wait.TakenUp)
	assert.True(t, got.OK)
	assert.Nil(t, got.Refusal)
}

// A wait that runs out is not success: exit 11 (wait_timeout), the
// message delivered, and whether it was taken up said in text and JSON.
func TestSendWaitTimeoutExits11(t *testing.T) {
	cfg := t.TempDir()
	startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "quiet", "-react=false")
	r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "send", "--transport", "socket", "--wait=700ms", "quiet", "go")
	require.Equal(t, 11, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "posted: \"quiet\"", "the transport's word at the hand-over")
	assert.Contains(t, string(r.Stderr), "peerctl: confirmed: its transcript shows the text")
	assert.Contains(t, string(r.Stdout), "wait: timeout: not taken up yet; still idle after")
	assert.Contains(t, string(r.Stderr), "peerctl: wait_timeout: delivered, not taken up yet, but the turn on it had not ended after")

	r = runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "send", "--transport", "socket", "--json", "--wait=700ms", "quiet", "go again")
	require.Equal(t, 11, r.Code, "stderr: %s", r.Stderr)
	var got receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.False(t, got.OK)
	assert.Equal(t, "delivered", got.Outcome, "the message itself was delivered")
	require.NotNil(t, got.Wait)
	assert.Equal(t, "timeout", got.Wait.End)
	assert.False(t, got.Wait.TakenUp)
	assert.Empty(t, got.Wait.TakenUpAt)
	require.NotNil(t, got.Refusal)
	assert.Equal(t, "wait_timeout", got.Refusal.Reason)
	assert.Equal(t, 11, got.Refusal.ExitCode)
}

type watchEvent struct {
	Event          string `json:"event"`
	At             string `json:"at"`
	SessionID      string `json:"sessionId"`
	PID            int    `json:"pid"`
	Name           string `json:"name"`
	Status         string `json:"status"`
	WaitingFor     string `json:"waitingFor"`
	Endpoint       string `json:"endpoint"`
	Verdict        string `json:"verdict"`
	Initial        bool   `json:"initial"`
	PreviousName   string `json:"previousName"`
	PreviousStatus string `json:"previousStatus"`
}

// watchProc runs `peerctl watch --json` and hands over its events.
type watchProc struct {
	cmd    *exec.Cmd
	events chan watchEvent
	stderr *testproc.Buffer
}

func startWatch(t *testing.T, env []string) *watchProc {
	t.Helper()
	cmd := exec.Command(peerctlBin(t), "watch", "--json")
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	w := &watchProc{cmd: cmd, events: make(chan watchEvent, 64), stderr: &testproc.Buffer{}}
	cmd.Stderr = w.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		defer close(w.events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev watchEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				t.Errorf("watch printed a line that is not JSON: %q", sc.Text())
				continue
			}
			w.events <- ev
		}
	}()
	return w
}

// next returns the next event for pid, skipping others.
func (w *watchProc) next(t *testing.T, pid int, after string) watchEvent {
	t.Helper()
	deadline := time.After(bound)
	for {
		select {
		case ev, ok := <-w.events:
			require.True(t, ok, "watch ended while waiting for an event after %s; stderr: %s", after, w.stderr)
			if ev.PID == pid {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event for pid %d within %s after %s", pid, bound, after)
		}
	}
}

func TestWatchJSON(t *testing.T) {
	cfg := t.TempDir()
	env := configEnv(t, cfg)
	early := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "early")
	w := startWatch(t, env)

	ev := w.next(t, early.pid, "start")
	assert.Equal(t, "appeared", ev.Event)
	assert.True(t, ev.Initial)

	a := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89")
	ev = w.next(t, a.pid, "a session started")
	assert.Equal(t, "appeared", ev.Event)
	assert.False(t, ev.Initial)
	assert.Equal(t, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", ev.SessionID)
	assert.Equal(t, "proj-89", ev.Name)
	assert.Equal(t, "live", ev.Verdict)
	assert.True(t, strings.HasPrefix(ev.Endpoint, "cc-peer:v1:"+strconv.Itoa(a.pid)+":proj-89:"), ev.Endpoint)
	_, err := time.Parse(time.RFC3339Nano, ev.At)
	assert.NoError(t, err)

	a.say(t, "status busy")
	ev = w.next(t, a.pid, "status busy")
	assert.Equal(t, "status", ev.Event)
	assert.Equal(t, "busy", ev.Status)
	assert.Equal(t, "idle", ev.PreviousStatus)

	a.say(t, "name proj: review")
	ev = w.next(t, a.pid, "rename")
	assert.Equal(t, "renamed", ev.Event)
	assert.Equal(t, "proj: review", ev.Name)
	assert.Equal(t, "proj-89", ev.PreviousName)

	a.kill(t)
	ev = w.next(t, a.pid, "SIGKILL")
	assert.Equal(t, "died", ev.Event)
	assert.Equal(t, "stale", ev.Verdict)

	early.stop(t)
	ev = w.next(t, early.pid, "clean exit")
	assert.Equal(t, "gone", ev.Event)
	assert.Equal(t, "removed", ev.Verdict, "a record that went away is not live")

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "watch exits 0 on SIGINT; stderr: %s", w.stderr)
	case <-time.After(bound):
		t.Fatalf("watch did not end within %s of SIGINT", bound)
	}
}

func TestWatchTextAndSIGTERM(t *testing.T) {
	cfg := t.TempDir()
	a := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89")
	cmd := exec.Command(peerctlBin(t), "watch")
	cmd.Env = configEnv(t, cfg)
	var out testproc.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The signal once the watch runs (it has printed the session), however
	// long its start takes on a busy machine.
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "appeared") }, bound, 20*time.Millisecond, "watch printed nothing")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(bound):
		t.Fatalf("watch did not end within %s of SIGTERM", bound)
	}
	assert.Regexp(t, `appeared\s+proj-89\s+session 3327af2a-a4a5-433e-b55c-1fb5f0a0ae29\s+pid `+strconv.Itoa(a.pid)+`\s+idle \(already running\)`, out.String())
}

// watch on a registry folder that does not exist says so once on stderr,
// in list's words, and keeps watching: the folder is picked up when made.
func TestWatchMissingFolderNote(t *testing.T) {
	cfg := t.TempDir()
	list := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "list")
	require.Equal(t, 0, list.Code)
	note, _, _ := strings.Cut(string(list.Stderr), "\n") // then list's "no live session" line
	require.Contains(t, note, "does not exist; no sessions", "precondition: list notes the missing folder")

	w := startWatch(t, configEnv(t, cfg))
	require.Eventually(t, func() bool { return strings.Contains(w.stderr.String(), note) }, bound, 20*time.Millisecond, "the watch's first read notes the missing folder")
	a := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89")
	ev := w.next(t, a.pid, "the first session made the folder")
	assert.Equal(t, "appeared", ev.Event)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(bound):
		t.Fatalf("watch did not end within %s of SIGINT", bound)
	}
	assert.Equal(t, 1, strings.Count(w.stderr.String(), note), "stderr: %q", w.stderr.String())
}

func TestEnrichJSON(t *testing.T) {
	cfg := t.TempDir()
	live := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89")
	stale := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "crashed")
	stale.kill(t)
	const unknown = "0badc0de-0000-4000-8000-000000000000"
	r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "enrich", "--json", live.id, stale.id, unknown)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got map[string]*struct {
		Endpoint string `json:"live_endpoint"`
		Status   string `json:"live_status"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	require.Len(t, got, 3)
	require.NotNil(t, got[live.id])
	assert.True(t, strings.HasPrefix(got[live.id].Endpoint, "cc-peer:v1:"+strconv.Itoa(live.pid)+":proj-89:"))
	assert.Equal(t, "idle", got[live.id].Status)
	assert.Nil(t, got[stale.id])
	assert.Nil(t, got[unknown])

	r = runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "enrich")
	assert.Equal(t, 2, r.Code)
}

func slugOf(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// An unconfirmed send says that its target has just started only when it
// has (its record shows no status yet, domain.Record.Starting: such a
// session holds what is posted to it until it settles); to a settled
// session the warning says nothing of starting (issue 44).
func TestSendUnconfirmedSaysWhenTheTargetIsStarting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []string
		starting bool
	}{
		{"starting", []string{"-starting"}, true},
		{"settled", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := t.TempDir()
			startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "proj-89", append(tc.flags, "-confirm=false", "-react=false")...)
			r := runPeerctl(t, runOpts{Env: configEnv(t, cfg)}, "send", "--transport", "socket", "--confirm-timeout", "300ms", "proj-89", "hello")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			stderr := string(r.Stderr)
			assert.Contains(t, stderr, "peerctl: warning: posted, not confirmed:")
			if tc.starting {
				assert.Regexp(t, `session 3327af2a-a4a5-433e-b55c-1fb5f0a0ae29 \(pid \d+, "proj-89"\) has just started and not settled \(its record shows no status yet\): Claude Code holds messages until then \(about 15 s\), so the text may still arrive; check before sending it again`, stderr)
				return
			}
			assert.NotContains(t, stderr, "started", "a settled session is not said to be starting: %s", stderr)
			assert.Contains(t, stderr, "the text was handed to the transport and may still arrive; check before sending it again")
		})
	}
}
