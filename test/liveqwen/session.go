//go:build unix

package liveqwen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/livecc"
)

// StartTimeout bounds the wait for a session's record (4–10 s measured on
// an idle machine; wide for a loaded 2-core one).
const StartTimeout = 90 * time.Second

// Root is a folder sessions share: one QWEN_HOME (so one registry), HOME,
// TMPDIR, and a working folder per session. It is short (under the temp
// folder) so the inbox socket path fits a Unix socket address.
type Root struct {
	Dir      string
	QwenHome string // Dir/qh: QWEN_HOME
	Home     string // Dir/h: HOME
	TmpDir   string // Dir/t: TMPDIR (the inbox sockets live under it)
}

// OfflineSettings are the settings.json keys every session of a Root has, so
// that it makes no call off the machine (read in the 0.24.4 and 0.23.0
// bundles): general.enableAutoUpdate false (otherwise, after its first paint,
// the TUI asks the npm registry for a newer release and installs it with a
// detached `npm install @qwen-code/qwen-code`), privacy.usageStatisticsEnabled
// false (on by default: usage statistics sent to Qwen) and telemetry.enabled
// false (OpenTelemetry export; off by default, kept off).
func OfflineSettings() map[string]any {
	return map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
}

// NewRoot makes a Root, its settings OfflineSettings, removed with
// everything still living in it when the test ends (livecc.TempRoot).
func NewRoot(t testing.TB) *Root {
	t.Helper()
	dir := livecc.TempRoot(t, "lqw")
	r := &Root{Dir: dir, QwenHome: filepath.Join(dir, "qh"), Home: filepath.Join(dir, "h"), TmpDir: filepath.Join(dir, "t")}
	for _, d := range []string{r.QwenHome, r.Home, r.TmpDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("liveqwen: make root: %v", err)
		}
	}
	r.Settings(t, "{}")
	return r
}

// Settings writes QwenHome/settings.json: OfflineSettings with the top-level
// keys of settings (a JSON object) put over them. A running session
// hot-reloads agents.crossSessionInbound from it.
func (r *Root) Settings(t testing.TB, settings string) {
	t.Helper()
	merged := OfflineSettings()
	var top map[string]any
	if err := json.Unmarshal([]byte(settings), &top); err != nil {
		t.Fatalf("liveqwen: settings %q: %v", settings, err)
	}
	for k, v := range top {
		merged[k] = v
	}
	raw, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		t.Fatalf("liveqwen: settings: %v", err)
	}
	if err := os.WriteFile(filepath.Join(r.QwenHome, "settings.json"), append(raw, '\n'), 0o600); err != nil {
		t.Fatalf("liveqwen: write settings: %v", err)
	}
}

// Env is an environment for a program reading this root's registry (the
// peerctl binary, qwen sessions ps): this process's, scrubbed of
// variables that tie it to another session, plus HOME, QWEN_HOME, TMPDIR.
func (r *Root) Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "TMUX", name == "TMUX_PANE", name == "QWEN_HOME", name == "QWEN_CODE",
			strings.HasPrefix(name, "QWEN_CODE_"), strings.HasPrefix(name, "XDG_"), strings.HasPrefix(name, "OPENAI_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+r.Home, "QWEN_HOME="+r.QwenHome, "TMPDIR="+r.TmpDir)
	return append(env, extra...)
}

// Session is one running Qwen Code TUI in tmux.
type Session struct {
	Root      *Root
	Cwd       string
	PID       int    // the registered process (the tmux pane's grandchild)
	SessionID string // record sessionId
	Name      string // record name
	IPCPath   string // record ipcPath ("" when messaging is off)
	File      string // the record's path
	// Stub is the session's model (its prompts show what the model saw).
	Stub *Stub

	t        testing.TB
	tmux     string
	tmuxSock string
}

var counter atomic.Int64

// Options shape Start.
type Options struct {
	Label string // working folder Root/w/<Label>; "" derives one
	// NoIPC waits for a record without ipcPath (messaging off).
	NoIPC bool
}

// Start runs bin (a qwen program) under node in a detached tmux session of
// its own tmux server, its model a Stub, and waits for its new record (with
// ipcPath unless opts.NoIPC). Everything is killed when the test ends.
func Start(t testing.TB, bin string, root *Root, opts Options) *Session {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("liveqwen: tmux: %v", err)
	}
	n := counter.Add(1)
	label := opts.Label
	if label == "" {
		label = "q" + strconv.FormatInt(n, 10)
	}
	s := &Session{Root: root, Cwd: filepath.Join(root.Dir, "w", label), t: t, tmux: tmux,
		tmuxSock: fmt.Sprintf("peerctl-liveqwen-%d-%d", os.Getpid(), n)}
	if err := os.MkdirAll(s.Cwd, 0o700); err != nil {
		t.Fatalf("liveqwen: %v", err)
	}
	stub := NewStub(t)
	s.Stub = stub
	before := map[string]bool{}
	if des, err := os.ReadDir(filepath.Join(root.QwenHome, "sessions")); err == nil {
		for _, de := range des {
			before[de.Name()] = true
		}
	}
	args := []string{"-f", os.DevNull, "new-session", "-d", "-s", "qw", "-x", "160", "-y", "50", "-c", s.Cwd}
	for _, kv := range []string{"HOME=" + root.Home, "QWEN_HOME=" + root.QwenHome, "TMPDIR=" + root.TmpDir,
		"OPENAI_API_KEY=sk-offline-fake", "OPENAI_BASE_URL=" + stub.URL, "OPENAI_MODEL=fake-model"} {
		args = append(args, "-e", kv)
	}
	args = append(args, "--", "node", bin)
	t.Cleanup(s.kill)
	if out, err := s.tmuxCmd(args...); err != nil {
		t.Fatalf("liveqwen: tmux new-session: %v\n%s", err, out)
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		if s.found(before, opts.NoIPC) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveqwen: session %s wrote no record in %s; screen:\n%s", label, StartTimeout, s.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Session) found(before map[string]bool, noIPC bool) bool {
	dir := filepath.Join(s.Root.QwenHome, "sessions")
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if before[de.Name()] || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		var rec struct {
			PID       int    `json:"pid"`
			SessionID string `json:"sessionId"`
			Name      string `json:"name"`
			Cwd       string `json:"cwd"`
			IPCPath   string `json:"ipcPath"`
		}
		if json.Unmarshal(raw, &rec) != nil || rec.Cwd != s.Cwd || rec.SessionID == "" || (rec.IPCPath == "") != noIPC {
			continue
		}
		s.PID, s.SessionID, s.Name, s.IPCPath, s.File = rec.PID, rec.SessionID, rec.Name, rec.IPCPath, filepath.Join(dir, de.Name())
		return true
	}
	return false
}

// TranscriptPath is the session's chat transcript (0.24.4):
// QWEN_HOME/projects/<cwd with "/" made "-">/chats/<sessionId>.jsonl.
func (s *Session) TranscriptPath() string {
	return filepath.Join(s.Root.QwenHome, "projects", strings.ReplaceAll(s.Cwd, "/", "-"), "chats", s.SessionID+".jsonl")
}

// WaitTranscript waits until a transcript line contains substr and returns
// it; it fails the test after timeout.
func (s *Session) WaitTranscript(t testing.TB, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if f, err := os.Open(s.TranscriptPath()); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 8<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), substr) {
					f.Close()
					return sc.Text()
				}
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveqwen: %q not in %s after %s; screen:\n%s", substr, s.TranscriptPath(), timeout, s.Screen())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Screen is what the session's terminal shows (for failure messages).
func (s *Session) Screen() string {
	out, err := s.tmuxCmd("capture-pane", "-p", "-t", "qw")
	if err != nil {
		return fmt.Sprintf("(no screen: %v %s)", err, bytes.TrimSpace(out))
	}
	return string(out)
}

// kill takes the tmux server down and makes sure the session's process is
// gone (SIGKILL after 10 s).
func (s *Session) kill() {
	_, _ = s.tmuxCmd("kill-server")
	if s.PID <= 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for unix.Kill(s.PID, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = unix.Kill(s.PID, unix.SIGKILL)
}

func (s *Session) tmuxCmd(args ...string) ([]byte, error) {
	return livecc.Tmux(s.tmux, s.tmuxSock, os.Environ(), args...)
}

// PS runs `qwen sessions ps --json` (0.24.x: one JSON object per line, no
// ipcToken) against the root's registry and returns each line's pid and
// sessionId, Qwen Code's own listing.
func PS(t testing.TB, bin string, root *Root) map[int]string {
	t.Helper()
	cmd := exec.Command("node", bin, "sessions", "ps", "--json")
	cmd.Env = root.Env()
	cmd.Dir = root.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("liveqwen: qwen sessions ps --json: %v\n%s", err, stderr.String())
	}
	got := map[int]string{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			PID       int    `json:"pid"`
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("liveqwen: qwen sessions ps --json printed %q: %v", line, err)
		}
		got[rec.PID] = rec.SessionID
	}
	return got
}

// Keys sends tmux key names to the session's terminal, e.g. "Enter",
// "Escape" (tmux send-keys). It fails the test when tmux fails.
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmuxCmd(append([]string{"send-keys", "-t", "qw"}, keys...)...); err != nil {
		s.t.Fatalf("liveqwen: send keys %q to session %d: %v %s", keys, s.PID, err, out)
	}
}

// Type sends text to the session's terminal literally, as if typed (tmux
// send-keys -l); no key names are interpreted and no Enter is added.
func (s *Session) Type(text string) {
	s.t.Helper()
	if out, err := s.tmuxCmd("send-keys", "-l", "-t", "qw", text); err != nil {
		s.t.Fatalf("liveqwen: type into session %d: %v %s", s.PID, err, out)
	}
}
