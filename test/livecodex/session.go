//go:build unix

package livecodex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/livecc"
)

// StartTimeout bounds the wait for a new session's thread (its rollout): a
// few seconds on an idle machine, the first one in a home also copies the
// daemon's package; wide for a loaded 2-core one.
const StartTimeout = 120 * time.Second

// APIKeyEnv is the variable the stand-in provider reads its key from
// (config.toml env_key); any non-empty value does.
const APIKeyEnv = "PEERCTL_LIVECODEX_KEY"

// OfflineConfig is the config.toml of every Root, for a model at modelURL
// (a Model's URL): the stand-in provider "standin" on the Responses wire,
// approval_policy "never" and a workspace-write sandbox (a turn never stops
// for a question), and off what would leave the machine or change the
// installation (read in 0.171.0 and measured with strace on the open
// network): check_for_update_on_startup (the TUI's release check),
// [analytics] enabled (usage events), [feedback] enabled (log upload) and
// [features] plugins (the curated plugin marketplace, synced at start with
// `git ls-remote https://github.com/openai/plugins`). With these a TUI and
// its daemon made no connection but to loopback. [tui] skips first-run
// notices.
func OfflineConfig(modelURL string) string {
	return `model = "standin-model"
model_provider = "standin"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.standin]
name = "standin"
base_url = ` + strconv.Quote(modelURL) + `
env_key = "` + APIKeyEnv + `"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false

[tui]
screen_reader_detection_done = true
`
}

// Root is one CODEX_HOME (as one user's ~/.codex) and HOME that sessions
// share, under a temporary folder removed with everything still living in
// it when the test ends (livecc.TempRoot); the app-server daemon a TUI
// starts for this home is stopped first (StopDaemon). Working folders are
// Dir/w/<label>.
type Root struct {
	Dir       string
	CodexHome string // Dir/ch
	Home      string // Dir/h
	BinDir    string // Dir/bin: holds "codex", a link to Bin, first on Env's PATH
	Bin       string // the codex program
	Model     *Model

	t testing.TB
}

// NewRoot makes a Root for bin whose sessions' model is model (nil: a
// fresh Model with DefaultScript).
func NewRoot(t testing.TB, bin string, model *Model) *Root {
	t.Helper()
	if model == nil {
		model = StartModel(t, nil)
	}
	dir := livecc.TempRoot(t, "lcx")
	r := &Root{Dir: dir, CodexHome: filepath.Join(dir, "ch"), Home: filepath.Join(dir, "h"), BinDir: filepath.Join(dir, "bin"),
		Bin: bin, Model: model, t: t}
	for _, d := range []string{r.CodexHome, r.Home, r.BinDir, filepath.Join(dir, "w")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("livecodex: make root: %v", err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(r.BinDir, "codex")); err != nil {
		t.Fatalf("livecodex: make root: %v", err)
	}
	r.appendConfig(t, OfflineConfig(model.URL))
	// Registered after TempRoot's clean-up, so it runs before it.
	t.Cleanup(r.StopDaemon)
	return r
}

func (r *Root) appendConfig(t testing.TB, text string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(r.CodexHome, "config.toml"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("livecodex: config: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatalf("livecodex: config: %v", err)
	}
}

// trust marks cwd a trusted project in config.toml (once: a table twice
// is a TOML error that stops Codex at start).
func (r *Root) trust(t testing.TB, cwd string) {
	t.Helper()
	table := fmt.Sprintf("[projects.%s]", strconv.Quote(cwd))
	raw, err := os.ReadFile(filepath.Join(r.CodexHome, "config.toml"))
	if err != nil {
		t.Fatalf("livecodex: config: %v", err)
	}
	if !strings.Contains(string(raw), "\n"+table+"\n") {
		r.appendConfig(t, "\n"+table+"\ntrust_level = \"trusted\"\n")
	}
}

// Env is an environment for a program using this root's Codex home (the
// peerctl binary, `codex queue`, `codex mcp add`): this process's, scrubbed
// of what ties it to another session (livecc.Scrub, CODEX_*, OPENAI_*),
// plus PATH with BinDir first (so `codex` is the root's), HOME,
// CODEX_HOME, the stand-in's key, then extra.
func (r *Root) Env(extra ...string) []string {
	var env []string
	for _, kv := range livecc.Scrub(os.Environ()) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "CODEX_") || strings.HasPrefix(name, "OPENAI_") || name == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+r.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+r.Home, "CODEX_HOME="+r.CodexHome, APIKeyEnv+"=offline")
	return append(env, extra...)
}

// Codex runs the codex program with args in this root's environment
// (Env), bounded by 120 s, and returns its standard output; it fails the
// test when codex fails.
func (r *Root) Codex(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := r.run(120*time.Second, args...)
	if err != nil {
		t.Fatalf("livecodex: codex %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (r *Root) run(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Bin, args...)
	cmd.Env = r.Env()
	cmd.Dir = r.Dir
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// pidRecord is the part of app-server-daemon/daemon.pid (and
// daemon-updater.pid) used here (0.171.0).
type pidRecord struct {
	PID             int `json:"pid"`
	ProcessIdentity struct {
		StartTicks uint64 `json:"startTicks"`
	} `json:"processIdentity"`
}

// DaemonPID is the pid of this home's app-server daemon as its record
// app-server-daemon/daemon.pid says, when that process still runs with the
// recorded start time; 0 otherwise.
func (r *Root) DaemonPID() int { return r.recordedPID("daemon.pid") }

func (r *Root) recordedPID(name string) int {
	raw, err := os.ReadFile(filepath.Join(r.CodexHome, "app-server-daemon", name))
	if err != nil {
		return 0
	}
	var rec pidRecord
	if json.Unmarshal(raw, &rec) != nil || rec.PID <= 0 {
		return 0
	}
	if ticks, ok := startTicks(rec.PID); !ok || (rec.ProcessIdentity.StartTicks != 0 && ticks != rec.ProcessIdentity.StartTicks) {
		return 0
	}
	return rec.PID
}

// StopDaemon stops this home's app-server daemon (`codex app-server daemon
// stop`) and its updater helper (`app-server daemon pid-update-loop`, which
// outlives the stop): each only when its record names a process that runs
// with the recorded start time and a program inside this root, so nothing
// the test did not start is touched. It waits up to 30 s for both to be
// gone and reports as a test error what is left.
func (r *Root) StopDaemon() {
	if r.DaemonPID() != 0 {
		if _, err := r.run(60*time.Second, "app-server", "daemon", "stop"); err != nil {
			r.t.Errorf("livecodex: codex app-server daemon stop: %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []int
		for _, name := range []string{"daemon.pid", "daemon-updater.pid"} {
			pid := r.recordedPID(name)
			if pid == 0 || !r.owns(pid) {
				continue
			}
			left = append(left, pid)
			sig := unix.SIGTERM
			if time.Until(deadline) < 20*time.Second {
				sig = unix.SIGKILL
			}
			_ = unix.Kill(pid, sig)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("livecodex: daemon processes %v of %s still run 30 s after the stop", left, r.CodexHome)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// owns reports whether pid runs a program from inside this root (the
// daemon runs the copy of codex it put in CODEX_HOME/packages).
func (r *Root) owns(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	return strings.HasPrefix(exe, r.Dir+"/")
}

// startTicks is field 22 of /proc/<pid>/stat (the start time in clock
// ticks); false when the process is gone or a zombie.
func startTicks(pid int) (uint64, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	n, err := strconv.ParseUint(f[19], 10, 64)
	return n, err == nil
}

// AddMCP registers an MCP server the way a user does: `codex mcp add
// <name> -- <command...>` with this root's CODEX_HOME.
func (r *Root) AddMCP(t testing.TB, name string, command ...string) {
	t.Helper()
	r.Codex(t, append([]string{"mcp", "add", name, "--"}, command...)...)
}

// Session is one running Codex TUI in tmux, on a tmux server of its own.
type Session struct {
	Root     *Root
	Label    string
	Cwd      string // Root.Dir/w/<Label>
	PID      int    // the codex TUI process (the tmux pane's)
	ThreadID string // the thread its first turn made (or resumed)
	Rollout  string // the thread's rollout file

	t        testing.TB
	tmux     string
	tmuxSock string
}

// Options shape Start.
type Options struct {
	// Label names the working folder Root.Dir/w/<Label>; "" derives one.
	Label string
	// Prompt is the first turn, so that the thread exists (Codex writes
	// the thread and its rollout only after one). "" is "hello".
	Prompt string
	// Args go before the prompt, e.g. "--no-daemon".
	Args []string
	// Resume, a thread id, runs `codex resume <id>` (in the thread's cwd,
	// Cwd) instead of a new thread with Prompt.
	Resume string
	// Cwd overrides the working folder (for Resume: the thread's).
	Cwd string
}

var counter atomic.Int64

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Start runs the root's codex TUI headless in a detached tmux session of
// its own tmux server (`tmux -L`, never the default server), in the root's
// environment (Root.Env), trusted in its
// working folder, and, for a new thread, waits until a new rollout whose
// session_meta cwd is the session's shows up: its name gives ThreadID. The
// tmux server (and with it the TUI) is killed when the test ends.
func Start(t testing.TB, root *Root, opts Options) *Session {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("livecodex: tmux: %v", err)
	}
	n := counter.Add(1)
	label := opts.Label
	if label == "" {
		label = "x" + strconv.FormatInt(n, 10)
	}
	s := &Session{Root: root, Label: label, Cwd: opts.Cwd, t: t, tmux: tmux,
		tmuxSock: fmt.Sprintf("peerctl-livecodex-%d-%d", os.Getpid(), n)}
	if s.Cwd == "" {
		s.Cwd = filepath.Join(root.Dir, "w", label)
	}
	if err := os.MkdirAll(s.Cwd, 0o700); err != nil {
		t.Fatalf("livecodex: %v", err)
	}
	root.trust(t, s.Cwd)
	before := map[string]bool{}
	for _, f := range root.rollouts() {
		before[f] = true
	}
	args := []string{"-f", os.DevNull, "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "cx", "-x", "200", "-y", "50", "-c", s.Cwd}
	args = append(args, "--", root.Bin)
	args = append(args, opts.Args...)
	if opts.Resume != "" {
		args = append(args, "resume", opts.Resume)
	} else if opts.Prompt != "" {
		args = append(args, opts.Prompt)
	} else {
		args = append(args, "hello")
	}
	t.Cleanup(s.kill)
	// The server starts with a placeholder session that keeps it up after
	// codex exits, so that the server, not init, reaps codex (livecc does
	// the same: the process of the pane that starts a server is not reaped).
	if out, err := s.tmuxCmd("-f", os.DevNull, "new-session", "-d", "-s", "keep", "--", "cat"); err != nil {
		t.Fatalf("livecodex: tmux start server: %v\n%s", err, out)
	}
	// A TUI that exits leaves its last screen (and why) for Screen.
	if out, err := s.tmuxCmd("set-option", "-g", "remain-on-exit", "on"); err != nil {
		t.Fatalf("livecodex: tmux remain-on-exit: %v\n%s", err, out)
	}
	out, err := s.tmuxCmd(args...)
	if err != nil {
		t.Fatalf("livecodex: tmux new-session: %v\n%s", err, out)
	}
	if s.PID, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.Fatalf("livecodex: tmux printed no pane pid: %q", out)
	}
	if opts.Resume != "" {
		s.ThreadID = opts.Resume
		s.Rollout = root.RolloutOf(opts.Resume)
		return s
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		for _, f := range root.rollouts() {
			if before[f] || rolloutCwd(f) != s.Cwd {
				continue
			}
			s.Rollout, s.ThreadID = f, uuidRE.FindString(strings.TrimSuffix(filepath.Base(f), ".jsonl"))
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("livecodex: session %s started no thread in %s; screen:\n%s", label, StartTimeout, s.Screen())
		}
		if _, ok := startTicks(s.PID); !ok {
			t.Fatalf("livecodex: codex (pid %d) exited before its thread started; screen:\n%s", s.PID, s.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rollouts lists CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl.
func (r *Root) rollouts() []string {
	files, _ := filepath.Glob(filepath.Join(r.CodexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	return files
}

// RolloutOf is the rollout file of thread id ("" when there is none).
func (r *Root) RolloutOf(id string) string {
	for _, f := range r.rollouts() {
		if strings.HasSuffix(f, "-"+id+".jsonl") {
			return f
		}
	}
	return ""
}

// rolloutCwd is the cwd of a rollout's first line (session_meta), "" when
// it is not (yet) there.
func rolloutCwd(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 1<<20).ReadBytes('\n')
	if err != nil {
		return ""
	}
	var meta struct {
		Type    string `json:"type"`
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &meta) != nil || meta.Type != "session_meta" {
		return ""
	}
	return meta.Payload.Cwd
}

// RolloutItem is one line of a rollout: its type ("session_meta",
// "response_item", "event_msg", "turn_context", …) and payload.
type RolloutItem struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// PayloadType is the payload's own "type" (e.g. "user_message",
// "task_complete", "message").
func (it RolloutItem) PayloadType() string {
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(it.Payload, &p)
	return p.Type
}

// UserMessage is the text of a user message the thread took in (an
// event_msg item_completed whose item is a UserMessage, 0.171.0), and
// whether the line is one.
func (it RolloutItem) UserMessage() (string, bool) { return it.completed("UserMessage") }

// AgentMessage is the text of an answer of the model (an event_msg
// item_completed whose item is an AgentMessage), and whether the line is
// one.
func (it RolloutItem) AgentMessage() (string, bool) { return it.completed("AgentMessage") }

func (it RolloutItem) completed(kind string) (string, bool) {
	var p struct {
		Type string `json:"type"`
		Item struct {
			Type    string `json:"type"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"item"`
	}
	if it.Type != "event_msg" || json.Unmarshal(it.Payload, &p) != nil || p.Type != "item_completed" || p.Item.Type != kind {
		return "", false
	}
	texts := make([]string, 0, len(p.Item.Content))
	for _, c := range p.Item.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, ""), true
}

// Items reads the thread's rollout as it is now (complete lines only).
func (s *Session) Items() []RolloutItem {
	if s.Rollout == "" {
		s.Rollout = s.Root.RolloutOf(s.ThreadID)
	}
	raw, _ := os.ReadFile(s.Rollout)
	var items []RolloutItem
	for _, line := range bytes.Split(raw, []byte("\n")) {
		var it RolloutItem
		if json.Unmarshal(line, &it) == nil {
			items = append(items, it)
		}
	}
	return items
}

// WaitRollout waits up to timeout until cond holds for the rollout's items
// and returns them; it fails the test, with the screen, otherwise.
func (s *Session) WaitRollout(t testing.TB, what string, timeout time.Duration, cond func([]RolloutItem) bool) []RolloutItem {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		items := s.Items()
		if cond(items) {
			return items
		}
		if time.Now().After(deadline) {
			t.Fatalf("livecodex: %s: not in the rollout %s after %s; screen:\n%s", what, s.Rollout, timeout, s.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// UserMessages are the user_message texts of the rollout, oldest first.
func UserMessages(items []RolloutItem) []string {
	var out []string
	for _, it := range items {
		if m, ok := it.UserMessage(); ok {
			out = append(out, m)
		}
	}
	return out
}

// Screen is what the session's terminal shows (for failure messages).
func (s *Session) Screen() string {
	out, err := s.tmuxCmd("capture-pane", "-p", "-t", "cx")
	if err != nil {
		return fmt.Sprintf("(no screen: %v %s)", err, bytes.TrimSpace(out))
	}
	return string(out)
}

// Keys types keys into the TUI (tmux send-keys arguments).
func (s *Session) Keys(keys ...string) {
	if out, err := s.tmuxCmd(append([]string{"send-keys", "-t", "cx"}, keys...)...); err != nil {
		s.t.Fatalf("livecodex: send-keys: %v %s", err, out)
	}
}

// Quit ends the TUI the way a user does (Ctrl-C, again while Codex says to
// press it again) and waits up to 30 s for its process to be gone; it
// fails the test otherwise. In daemon mode the daemon keeps the thread
// loaded for about a minute after.
func (s *Session) Quit() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var next time.Time
	for {
		if _, ok := startTicks(s.PID); !ok {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("livecodex: codex (pid %d) did not exit on Ctrl-C; screen:\n%s", s.PID, s.Screen())
		}
		if time.Now().After(next) {
			_, _ = s.tmuxCmd("send-keys", "-t", "cx", "C-c")
			time.Sleep(200 * time.Millisecond)
			_, _ = s.tmuxCmd("send-keys", "-t", "cx", "C-c")
			next = time.Now().Add(3 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill takes the tmux server down and makes sure the TUI is gone (SIGKILL
// after 10 s).
func (s *Session) kill() {
	_, _ = s.tmuxCmd("kill-server")
	if s.PID <= 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := startTicks(s.PID); !ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = unix.Kill(s.PID, unix.SIGKILL)
}

func (s *Session) tmuxCmd(args ...string) ([]byte, error) {
	// The server, started by the first command, hands Root.Env to the TUI.
	return livecc.Tmux(s.tmux, s.tmuxSock, s.Root.Env(), args...)
}
