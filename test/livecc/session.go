//go:build unix

package livecc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
)

// FakeAPIKey is the ANTHROPIC_API_KEY sessions get unless Options.NoAPIKey is
// set. It is not a real key; offline, Claude Code never checks it.
const FakeAPIKey = "sk-ant-api03-peerctl-livecc-offline-fake-key-000000"

// DefaultStartTimeout bounds how long Start waits for a session's record
// (a settled one with WaitSettled). A session takes a few seconds; on a
// loaded 2-core machine settling once took over 30 s, so the bound is wide:
// it costs nothing when things go well.
const DefaultStartTimeout = 90 * time.Second

// Options says how Start runs a session. The zero value is a session with its
// own fresh root, the fake API key and a derived name.
type Options struct {
	// Root is a folder made by NewRoot. Sessions started with the same Root
	// share one config dir (so one registry), one TMPDIR and one HOME, each in
	// its own working directory. Empty: a fresh root for this session alone.
	Root string
	// Label names the session's working directory Root/proj/<Label> and its tmux
	// session. Empty: "s1", "s2", … in start order.
	Label string
	// Cwd overrides the working directory: a relative path is taken under
	// Root/proj; it is created when missing. An absolute path outside Root/proj
	// is trusted only through its own .claude.json entry, which a session
	// already running in the same Root may overwrite (see NewRoot).
	Cwd string
	// Name is passed as --name (the session's display name). Empty: Claude Code
	// derives one (<cwd basename>-<2 hex>).
	Name string
	// NoAPIKey starts the session with ANTHROPIC_API_KEY unset ("Not logged in").
	NoAPIKey bool
	// ModelURL, when set, is the session's ANTHROPIC_BASE_URL: its model is
	// whatever answers there (a test/scriptedmodel Server), and ModelKey
	// replaces FakeAPIKey as its ANTHROPIC_API_KEY (approved in the seeded
	// config). Claude Code 2.1.332 sends every model request there.
	ModelURL, ModelKey string
	// Settings, when not nil, is merged into <ConfigDir>/settings.json (the
	// user settings of every session of the Root) before the session starts,
	// e.g. ReplySettings.
	Settings map[string]any
	// Args are extra command line arguments for claude.
	Args []string
	// Env adds NAME=value entries to the session's environment.
	Env []string
	// StartTimeout bounds the wait for the record. Zero: DefaultStartTimeout.
	StartTimeout time.Duration
	// NoSocketWait makes Start return as soon as the record has a sessionId,
	// without waiting for messagingSocketPath (see Start).
	NoSocketWait bool
	// WaitSettled makes Start also wait until the record has "status". Measured
	// on 2.1.328 with the fake key: status appears ~13 s after the record, and
	// until then the session holds inbox posts (their transcript enqueue line
	// comes only when it settles). Without a key it is there at once.
	WaitSettled bool
}

// Session is one running interactive Claude Code process in a detached tmux
// session on a tmux server of its own. Its fields are set by Start and never
// change; Record reads the live file.
type Session struct {
	Bin        string // the claude program
	Root       string // the root folder (see NewRoot)
	ConfigDir  string // CLAUDE_CONFIG_DIR: Root/config
	TmpDir     string // TMPDIR: Root/tmp (the inbox socket lives in TmpDir/cc-socks)
	HomeDir    string // HOME: Root/home
	Cwd        string // working directory, symlinks resolved
	PID        int    // the claude process (the tmux pane's process)
	SessionID  string // record field sessionId
	Name       string // record field name (may be empty until derived)
	SocketPath string // record field messagingSocketPath; empty when the version publishes none

	t         testing.TB
	tmuxSock  string // tmux -L name
	tmuxName  string // tmux session name
	pane      string // tmux pane id of claude, "%N"
	serverPID int    // the tmux server
	tmuxPath  string // the tmux server's socket file
	tmux      string // tmux program
}

var (
	counter  atomic.Int64
	seedLock sync.Mutex
)

// NewRoot makes a root folder for sessions, removed with everything still
// living in it when the test ends (TempRoot). It is short on purpose: the
// inbox socket path <root>/tmp/cc-socks/<pid>.sock must fit a Unix socket
// address (~104–108 bytes), or Claude Code moves it elsewhere. Layout:
// config/, tmp/, home/, proj/.
func NewRoot(t testing.TB) string {
	t.Helper()
	root := TempRoot(t, "lcc")
	for _, d := range []string{"config", "tmp", "home", "proj"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatalf("livecc: make root: %v", err)
		}
	}
	// Trust proj/ as a whole, before any session runs. Measured on 2.1.328: a
	// running session rewrites .claude.json from its own copy, dropping a
	// project entry seeded meanwhile for a later session (which then stops at
	// the trust dialog), while trust of a parent folder covers its subfolders.
	if err := SeedConfig(filepath.Join(root, "config"), filepath.Join(root, "proj"), FakeAPIKey); err != nil {
		t.Fatalf("livecc: %v", err)
	}
	return root
}

// Start runs bin as an interactive session in a detached tmux session and waits
// until <ConfigDir>/sessions/<PID>.json holds a sessionId and, unless
// opts.NoSocketWait, a messagingSocketPath — or, for versions that publish no
// socket (2.1.224), until the record has settled (has "status") without one.
// It fails the test, with the screen, when that takes longer than
// opts.StartTimeout. The session and its tmux server are killed when the test ends.
//
// The session's environment is this process's, scrubbed as by Scrub, plus
// HOME, CLAUDE_CONFIG_DIR, TMPDIR, OfflineEnv, ANTHROPIC_API_KEY
// (FakeAPIKey unless opts.NoAPIKey) and opts.Env. Before it starts,
// <ConfigDir>/.claude.json is seeded so no first-run dialog blocks it.
func Start(t testing.TB, bin string, opts Options) *Session {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("livecc: tmux not found: %v", err)
	}
	n := counter.Add(1)
	root := opts.Root
	if root == "" {
		root = NewRoot(t)
	}
	label := opts.Label
	if label == "" {
		label = "s" + strconv.FormatInt(n, 10)
	}
	cwd := opts.Cwd
	switch {
	case cwd == "":
		cwd = filepath.Join(root, "proj", label)
	case !filepath.IsAbs(cwd):
		cwd = filepath.Join(root, "proj", cwd)
	}
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatalf("livecc: make cwd: %v", err)
	}
	if cwd, err = filepath.EvalSymlinks(cwd); err != nil {
		t.Fatalf("livecc: resolve cwd: %v", err)
	}
	s := &Session{
		Bin:       bin,
		Root:      root,
		ConfigDir: filepath.Join(root, "config"),
		TmpDir:    filepath.Join(root, "tmp"),
		HomeDir:   filepath.Join(root, "home"),
		Cwd:       cwd,
		t:         t,
		tmuxSock:  fmt.Sprintf("peerctl-livecc-%d-%d", os.Getpid(), n),
		tmuxName:  "cc-" + strconv.FormatInt(n, 10),
		tmux:      tmux,
	}
	for _, d := range []string{s.ConfigDir, s.TmpDir, s.HomeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("livecc: %v", err)
		}
	}
	key := FakeAPIKey
	if opts.ModelKey != "" {
		key = opts.ModelKey
	}
	if opts.NoAPIKey {
		key = ""
	}
	if opts.Settings != nil {
		if err := MergeSettings(s.ConfigDir, opts.Settings); err != nil {
			t.Fatalf("livecc: %v", err)
		}
	}
	if err := SeedConfig(s.ConfigDir, cwd, key); err != nil {
		t.Fatalf("livecc: %v", err)
	}
	args := []string{"-f", os.DevNull, "new-session", "-d", "-P", "-F", "#{pane_id} #{pane_pid}",
		"-s", s.tmuxName, "-x", "200", "-y", "50", "-c", cwd}
	env := append([]string{
		"HOME=" + s.HomeDir,
		"CLAUDE_CONFIG_DIR=" + s.ConfigDir,
		"TMPDIR=" + s.TmpDir,
	}, OfflineEnv...)
	if key != "" {
		env = append(env, "ANTHROPIC_API_KEY="+key)
	}
	if opts.ModelURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+opts.ModelURL)
	}
	env = append(env, opts.Env...)
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "--", bin)
	if opts.Name != "" {
		args = append(args, "--name", opts.Name)
	}
	args = append(args, opts.Args...)

	// Cleanup first, so a failed start still takes the server down.
	t.Cleanup(s.kill)
	if err := s.launch(args, opts); err != nil {
		t.Fatalf("livecc: %v", err)
	}
	return s
}

// launch starts the tmux server and claude in it and waits for the record.
func (s *Session) launch(args []string, opts Options) error {
	// Start the server with a placeholder session before claude's. Measured
	// with tmux 3.3a: the process of the pane that starts a server is not
	// reaped when it exits (it stays a zombie, so kill(pid, 0) still finds it).
	// The placeholder also keeps the server up after claude exits, so the
	// server, not init, reaps claude; see reap for the rest.
	out, err := s.tmuxCmd("-f", os.DevNull, "new-session", "-d", "-s", "keep", "-P", "-F", "#{pid}", "--", "cat")
	if err != nil {
		return fmt.Errorf("tmux start server: %w\n%s", err, out)
	}
	if s.serverPID, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return fmt.Errorf("tmux printed no server pid: %q", out)
	}
	// kill-server leaves the socket file behind; kill removes it.
	if out, err := s.tmuxCmd("display-message", "-p", "-t", "keep", "#{socket_path}"); err == nil {
		s.tmuxPath = strings.TrimSpace(string(out))
	}
	out, err = s.tmuxCmd(args...)
	if err != nil {
		return fmt.Errorf("tmux new-session: %w\n%s", err, out)
	}
	pane, pid, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if s.PID, err = strconv.Atoi(pid); err != nil || !strings.HasPrefix(pane, "%") {
		return fmt.Errorf("tmux printed no pane id and pid: %q", out)
	}
	s.pane = pane
	return s.awaitRecord(opts)
}

func (s *Session) awaitRecord(opts Options) error {
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	deadline := time.Now().Add(timeout)
	var rec map[string]any
	for {
		rec = s.Record()
		sid, _ := rec["sessionId"].(string)
		sock, _ := rec["messagingSocketPath"].(string)
		_, settled := rec["status"]
		// A session started with --name first registers a derived name and
		// writes the given one a moment later (2.1.332): wait for it.
		name, _ := rec["name"].(string)
		named := opts.Name == "" || name == opts.Name
		if sid != "" && named && (opts.NoSocketWait || sock != "" || settled) && (!opts.WaitSettled || settled) {
			s.SessionID = sid
			s.SocketPath = sock
			s.Name = name
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %d in %q wrote no complete record in %v (record: %v; process: %s); screen:\n%s",
				s.PID, s.Cwd, timeout, rec, procState(s.PID), s.Screen())
		}
		if !alive(s.PID) {
			return fmt.Errorf("claude (pid %d) exited before registering; screen:\n%s", s.PID, s.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procState describes pid for failure messages: its State and Threads lines.
func procState(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "State:") || strings.HasPrefix(line, "Threads:") {
			parts = append(parts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(parts, ", ")
}

// SeedConfig writes the first-run answers into <configDir>/.claude.json so an
// interactive session starts straight into its prompt: hasCompletedOnboarding,
// theme, customApiKeyResponses.approved holding the last 20 characters of
// apiKey (when not empty), and projects[cwd].hasTrustDialogAccepted. Other
// content of the file is kept. Safe against concurrent seeders of one file
// (in-process mutex plus a flock on a sibling lock file).
func SeedConfig(configDir, cwd, apiKey string) error {
	seedLock.Lock()
	defer seedLock.Unlock()
	path := filepath.Join(configDir, ".claude.json")
	unlock, err := lockFile(path + ".livecc-lock")
	if err != nil {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	defer unlock()
	cfg := map[string]any{}
	if raw, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("seed %s: %w", path, err)
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	cfg["hasCompletedOnboarding"] = true
	cfg["theme"] = "dark"
	cfg["hasSeenAutoDefaultNotice"] = true
	// 2.1.332 asks "Make auto mode your default permission mode?" at start
	// (a dialog that holds the session) unless this is set.
	cfg["hasSeenAutoDefaultNudge"] = true
	if apiKey != "" {
		tail := apiKey
		if len(tail) > 20 {
			tail = tail[len(tail)-20:]
		}
		cfg["customApiKeyResponses"] = map[string]any{"approved": []string{tail}, "rejected": []string{}}
	}
	projects, _ := cfg["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
	}
	p, _ := projects[cwd].(map[string]any)
	if p == nil {
		p = map[string]any{"allowedTools": []string{}}
	}
	p["hasTrustDialogAccepted"] = true
	p["hasCompletedProjectOnboarding"] = true
	projects[cwd] = p
	cfg["projects"] = projects
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	tmp := path + ".livecc-tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	return nil
}

// ReplySettings are the user settings a session whose model is scripted
// needs to run SendMessage without a prompt (measured on 2.1.332, see
// docs/CLAUDE-CODE-FACTS.md): SendMessage is a deferred tool there, and
// under the default "auto mode" a fake endpoint first gets a billing dialog
// and the auto-mode classifier's own request, and the call is "Not run";
// these permissions make it run at once.
func ReplySettings() map[string]any {
	return map[string]any{"permissions": map[string]any{
		"allow": []string{"SendMessage", "ListAgents", "ToolSearch"}, "defaultMode": "default"}}
}

// MergeSettings merges settings (top-level keys) into <configDir>/settings.json,
// keeping its other content.
func MergeSettings(configDir string, settings map[string]any) error {
	seedLock.Lock()
	defer seedLock.Unlock()
	path := filepath.Join(configDir, "settings.json")
	cur := map[string]any{}
	if raw, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &cur); err != nil {
			return fmt.Errorf("settings %s: %w", path, err)
		}
	}
	for k, v := range settings {
		cur[k] = v
	}
	raw, err := json.MarshalIndent(cur, "", "  ")
	if err != nil {
		return fmt.Errorf("settings %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("settings %s: %w", path, err)
	}
	return nil
}

// RecordPath is <ConfigDir>/sessions/<PID>.json.
func (s *Session) RecordPath() string {
	return filepath.Join(s.ConfigDir, "sessions", strconv.Itoa(s.PID)+".json")
}

// Record reads and decodes the session's registry record as it is now; nil
// when the file is missing or not (yet) complete JSON. Numbers decode as float64.
func (s *Session) Record() map[string]any {
	raw, err := os.ReadFile(s.RecordPath())
	if err != nil {
		return nil
	}
	var rec map[string]any
	if json.Unmarshal(raw, &rec) != nil {
		return nil
	}
	return rec
}

// TranscriptPath is where Claude Code writes the session's transcript, by
// the product's own rule (domain.TranscriptPath; TestLiveSlug pins it).
func (s *Session) TranscriptPath() string {
	return domain.TranscriptPath(s.ConfigDir, s.Cwd, s.SessionID)
}

// WaitTranscript waits up to timeout for a line of the transcript that contains
// substr and returns that line. It fails the test, with the transcript and the
// screen, when none appears in time.
func (s *Session) WaitTranscript(t testing.TB, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		raw, _ := os.ReadFile(s.TranscriptPath())
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		for sc.Scan() {
			if strings.Contains(sc.Text(), substr) {
				return sc.Text()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("livecc: no line with %q in %s after %v\ntranscript:\n%s\nscreen:\n%s",
				substr, s.TranscriptPath(), timeout, raw, s.Screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Screen returns what the session's terminal shows now (tmux capture-pane), for
// failure messages; empty when the tmux session is gone.
func (s *Session) Screen() string {
	out, err := s.tmuxCmd("capture-pane", "-p", "-t", s.pane)
	if err != nil {
		return fmt.Sprintf("(no screen: %v %s)", err, bytes.TrimSpace(out))
	}
	return string(out)
}

// Stop ends the session the way a user does, Ctrl-C twice, and waits (up to
// 20 s) until the process has exited and Claude Code has removed its record;
// it fails the test otherwise.
func (s *Session) Stop() {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var nextKeys time.Time
	for {
		if s.reap() && s.Record() == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("livecc: session %d did not exit cleanly on Ctrl-C (alive=%v, record=%v); screen:\n%s",
				s.PID, alive(s.PID), s.Record() != nil, s.Screen())
		}
		if time.Now().After(nextKeys) && alive(s.PID) {
			// The second Ctrl-C must come while "Press Ctrl-C again to exit" shows.
			_, _ = s.tmuxCmd("send-keys", "-t", s.pane, "C-c")
			time.Sleep(300 * time.Millisecond)
			_, _ = s.tmuxCmd("send-keys", "-t", s.pane, "C-c")
			nextKeys = time.Now().Add(3 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Crash kills the session with SIGKILL and waits (up to 10 s) until the pid is
// gone (reaped, so kill(pid, 0) fails with ESRCH). Claude Code gets no chance to clean up: its record, key file and socket
// stay behind as a stale record.
func (s *Session) Crash() {
	s.t.Helper()
	if err := unix.Kill(s.PID, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		s.t.Fatalf("livecc: kill %d: %v", s.PID, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.reap() {
		if time.Now().After(deadline) {
			s.t.Fatalf("livecc: pid %d not gone 10 s after SIGKILL", s.PID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill takes the tmux server down and makes sure the claude process is gone.
func (s *Session) kill() {
	_, _ = s.tmuxCmd("kill-server")
	if s.tmuxPath != "" {
		_ = os.Remove(s.tmuxPath)
	}
	if s.PID <= 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(s.PID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(s.PID) {
		_ = unix.Kill(s.PID, unix.SIGKILL)
	}
}

// reap reports whether the claude process is gone entirely. While it is a
// zombie it nudges the tmux server with SIGCHLD: measured with tmux 3.3a, the
// server now and then misses the SIGCHLD of a SIGKILLed pane process and
// leaves it unreaped, and a zombie still answers kill(pid, 0) — so Claude
// Code's own liveness check (and ours) would still count it as running.
func (s *Session) reap() bool {
	if gone(s.PID) {
		return true
	}
	if !alive(s.PID) && s.serverPID > 0 {
		_ = unix.Kill(s.serverPID, unix.SIGCHLD)
	}
	return false
}

func (s *Session) tmuxCmd(args ...string) ([]byte, error) {
	return Tmux(s.tmux, s.tmuxSock, Scrub(os.Environ()), args...)
}

// Tmux runs the tmux program on the server of socket name sock (tmux -L,
// never the default server) with args and env (the server a first command
// starts keeps env for its panes), bounded by 10 s, and returns what it
// printed (stdout and stderr). The live Claude Code, Qwen Code and Codex
// sessions all run through it.
func Tmux(program, sock string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command(program, append([]string{"-L", sock}, args...)...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.Bytes(), err
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return out.Bytes(), errors.New("tmux " + strings.Join(args, " ") + ": timed out")
	}
}

// gone reports whether no process (not even a zombie) has pid.
func gone(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// alive reports whether pid runs and is not a zombie waiting to be reaped.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which runs to the last ')'.
	if i := bytes.LastIndexByte(raw, ')'); i >= 0 && i+2 < len(raw) {
		return raw[i+2] != 'Z' && raw[i+2] != 'X'
	}
	return true
}
