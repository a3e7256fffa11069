//go:build unix

package liveopencode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/test/livecc"
)

// StartTimeout bounds a server's or TUI's start on a loaded machine
// (measured: a TUI takes 30–40 s to draw on 2 busy CPUs; once, at a load
// of 12 on them, a server printed no URL within 2 minutes).
const StartTimeout = 240 * time.Second

// RequestTimeout bounds one HTTP request of these helpers to an opencode
// server: a TUI's server that took the connection and never answers (seen
// once on a loaded machine, with a bare http.Get holding a test until the
// package's timeout) is then one failed try among the polls, not a hang.
const RequestTimeout = 15 * time.Second

// HTTP is the client every helper here asks opencode with.
var HTTP = &http.Client{Timeout: RequestTimeout}

// Root is one isolated opencode user: HOME and every XDG_* folder under
// Dir, an offline opencode.json whose model is Model.
type Root struct {
	Dir    string
	Home   string // Dir/h, also holding the XDG folders
	Bin    string
	Model  *Model
	Config string // $XDG_CONFIG_HOME/opencode/opencode.json
	// DataHome is $XDG_DATA_HOME, whose opencode/opencode.db is the
	// root's database (peerctl serves the processes of one database).
	DataHome string
}

// Config is the opencode.json of a root: the stand-in model as provider
// "local" (model local/pong-1, also the small model that writes titles),
// autoupdate off, sharing disabled, and edits, bash and webfetch denied.
func Config(modelURL string) string { return config(modelURL, false) }

// config is Config, or with shell the model's tool calls on and opencode's
// bash tool allowed (edits and webfetch still denied).
func config(modelURL string, shell bool) string {
	bash := "deny"
	if shell {
		bash = "allow"
	}
	b, _ := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
		"model": "local/pong-1", "small_model": "local/pong-1",
		"provider": map[string]any{"local": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "Local",
			"options": map[string]any{"baseURL": modelURL, "apiKey": "dummy"},
			"models":  map[string]any{"pong-1": map[string]any{"name": "Pong 1", "tool_call": shell}}}},
		"permission": map[string]any{"edit": "deny", "bash": bash, "webfetch": "deny"},
	})
	return string(b) + "\n"
}

// AllowShell rewrites the root's opencode.json so that the model may call
// tools and opencode's bash tool runs without asking: a user turn that
// starts with ShellPrefix then runs the rest of its text in a shell of the
// opencode process (Model). Call it before the root's processes start.
func (r *Root) AllowShell(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(r.Config, []byte(config(r.Model.URL, true)), 0o600); err != nil {
		t.Fatalf("liveopencode: config: %v", err)
	}
}

// NewRoot makes a Root for bin with a fresh Model.
func NewRoot(t testing.TB, bin string) *Root {
	t.Helper()
	dir := livecc.TempRoot(t, "loc")
	r := &Root{Dir: dir, Home: filepath.Join(dir, "h"), Bin: bin, Model: StartModel(t)}
	r.Config = filepath.Join(r.Home, ".config", "opencode", "opencode.json")
	r.DataHome = filepath.Join(r.Home, ".local", "share")
	for _, d := range []string{filepath.Dir(r.Config), filepath.Join(r.Home, ".local", "share"), filepath.Join(r.Home, ".cache"),
		filepath.Join(r.Home, ".local", "state"), filepath.Join(dir, "w")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("liveopencode: make root: %v", err)
		}
	}
	if err := os.WriteFile(r.Config, []byte(Config(r.Model.URL)), 0o600); err != nil {
		t.Fatalf("liveopencode: config: %v", err)
	}
	return r
}

// Env is the environment of opencode and of peerctl for this root: this
// process's, scrubbed of what ties it to another session (livecc.Scrub)
// and of OPENCODE_*, then HOME and the XDG folders under Home, the
// variables that stop opencode's network use (models fetch, autoupdate,
// share, LSP downloads, default plug-ins, Claude Code's files), npm's
// registry pointed at a closed loopback port (the first start's
// background plug-in install then fails at once, a warning), then extra.
func (r *Root) Env(extra ...string) []string {
	var env []string
	for _, kv := range livecc.Scrub(os.Environ()) {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OPENCODE_") || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "npm_config_") || name == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+r.Home,
		"XDG_CONFIG_HOME="+filepath.Join(r.Home, ".config"), "XDG_DATA_HOME="+r.DataHome,
		"XDG_CACHE_HOME="+filepath.Join(r.Home, ".cache"), "XDG_STATE_HOME="+filepath.Join(r.Home, ".local", "state"),
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
		"npm_config_registry=http://127.0.0.1:9/")
	return append(env, extra...)
}

// Workdir makes Root.Dir/w/<label> and returns it.
func (r *Root) Workdir(t testing.TB, label string) string {
	t.Helper()
	d := filepath.Join(r.Dir, "w", label)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatalf("liveopencode: %v", err)
	}
	return d
}

// Server is one `opencode serve` process.
type Server struct {
	Root *Root
	Cwd  string
	PID  int
	// Addr is the address it listens on ("127.0.0.2:4096", "[::1]:4096"),
	// URL "http://" and Addr.
	Addr, URL string
	cmd       *exec.Cmd
}

var listening = regexp.MustCompile(`listening on http://(\S+)`)

// Serve starts `opencode serve --port 0 --hostname 127.0.0.1` in cwd
// (ServeOn).
func (r *Root) Serve(t testing.TB, cwd string, extra ...string) *Server {
	t.Helper()
	return r.ServeOn(t, cwd, "127.0.0.1", 0, extra...)
}

// ServeOn starts `opencode serve --port <port> --hostname <host>` in cwd,
// in a process group of its own, and waits (StartTimeout) for the line
// that names its URL (opencode-ai 1.18.33 prints "listening on
// http://::1:4096", the host unbracketed) and for GET /global/health to
// answer. The group is killed when the test ends. extra is added to the
// environment (OPENCODE_SERVER_PASSWORD=…: then any answer of the health
// check will do).
func (r *Root) ServeOn(t testing.TB, cwd, host string, port int, extra ...string) *Server {
	t.Helper()
	cmd := exec.Command(r.Bin, "serve", "--port", strconv.Itoa(port), "--hostname", host)
	cmd.Dir, cmd.Env = cwd, r.Env(extra...)
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("liveopencode: serve: %v", err)
	}
	log, err := os.Create(filepath.Join(r.Dir, fmt.Sprintf("serve-%d.log", counter.Add(1))))
	if err != nil {
		t.Fatalf("liveopencode: serve: %v", err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatalf("liveopencode: serve: %v", err)
	}
	s := &Server{Root: r, Cwd: cwd, PID: cmd.Process.Pid, cmd: cmd}
	t.Cleanup(s.Kill)
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			_, _ = fmt.Fprintln(log, sc.Text())
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				i := strings.LastIndex(m[1], ":")
				select {
				case addrs <- net.JoinHostPort(strings.Trim(m[1][:i], "[]"), m[1][i+1:]):
				default:
				}
			}
		}
	}()
	select {
	case s.Addr = <-addrs:
		s.URL = "http://" + s.Addr
	case <-time.After(StartTimeout):
		b, _ := os.ReadFile(log.Name())
		if len(b) > 4096 {
			b = b[len(b)-4096:]
		}
		t.Fatalf("liveopencode: opencode serve printed no URL in %s; its output ends:\n%s", StartTimeout, b)
	}
	WaitHealthy(t, s.URL, extra...)
	return s
}

// Kill ends the server's process group (SIGKILL) and reaps it.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = unix.Kill(-s.PID, unix.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// WaitHealthy polls GET <url>/global/health until it answers 200 (or, with
// a password in extra, any answer), failing the test after StartTimeout.
func WaitHealthy(t testing.TB, url string, extra ...string) {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		resp, err := HTTP.Get(url + "/global/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || len(extra) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("liveopencode: %s/global/health did not answer in %s: %v", url, StartTimeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Get asks the server GET path and decodes its JSON answer into v. A
// request that gets no answer (RequestTimeout: a server busy on a loaded
// machine) is asked again, until StartTimeout.
func Get(t testing.TB, url, path string, v any) {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	resp, err := HTTP.Get(url + path)
	for err != nil && time.Now().Before(deadline) {
		t.Logf("liveopencode: GET %s: %v; asking again", path, err)
		resp, err = HTTP.Get(url + path)
	}
	if err != nil {
		t.Fatalf("liveopencode: GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("liveopencode: GET %s: %s %s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("liveopencode: GET %s: %v: %s", path, err, b)
	}
}

// createClient waits for the answer to a request that makes something
// (POST /session) as long as a start may take: such a request is not
// asked again (a late answer to the first would leave two), and a
// server on a loaded machine has taken more than RequestTimeout to
// answer it.
var createClient = &http.Client{Timeout: StartTimeout}

// NewSession makes a session through POST /session (opencode's own API)
// and returns its id, waiting for the answer up to StartTimeout.
func NewSession(t testing.TB, url string) string {
	t.Helper()
	resp, err := createClient.Post(url+"/session", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("liveopencode: POST /session: %v", err)
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"id"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
		t.Fatalf("liveopencode: POST /session: %s %s (%v)", resp.Status, b, err)
	}
	return s.ID
}

// Message is one message of GET /session/{id}/message (opencode 1.18.33):
// its info and the texts of its text parts.
type Message struct {
	ID, Role, ParentID string
	Texts              []string
}

// Messages lists a session's messages.
func Messages(t testing.TB, url, session string) []Message {
	t.Helper()
	var raw []struct {
		Info struct {
			ID       string `json:"id"`
			Role     string `json:"role"`
			ParentID string `json:"parentID"`
		} `json:"info"`
		Parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	Get(t, url, "/session/"+session+"/message", &raw)
	out := make([]Message, len(raw))
	for i, m := range raw {
		out[i] = Message{ID: m.Info.ID, Role: m.Info.Role, ParentID: m.Info.ParentID}
		for _, p := range m.Parts {
			if p.Type == "text" {
				out[i].Texts = append(out[i].Texts, p.Text)
			}
		}
	}
	return out
}

var counter atomic.Int64

// TUI is one opencode TUI in tmux, on a tmux server of its own.
type TUI struct {
	Root     *Root
	Cwd      string
	PID      int
	tmux     string
	tmuxSock string
	t        testing.TB
}

// StartTUI runs `opencode [args...]` in cwd headless in a detached tmux
// session of its own tmux server (never the default one); the server, and
// with it the TUI, is killed when the test ends. It returns at once: wait
// with WaitScreen.
func (r *Root) StartTUI(t testing.TB, cwd string, args ...string) *TUI {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("liveopencode: tmux: %v", err)
	}
	u := &TUI{Root: r, Cwd: cwd, tmux: tmux, t: t, tmuxSock: fmt.Sprintf("peerctl-liveopencode-%d-%d", os.Getpid(), counter.Add(1))}
	t.Cleanup(u.kill)
	if out, err := u.tmuxCmd("-f", os.DevNull, "new-session", "-d", "-s", "keep", "--", "cat"); err != nil {
		t.Fatalf("liveopencode: tmux start server: %v\n%s", err, out)
	}
	_, _ = u.tmuxCmd("set-option", "-g", "remain-on-exit", "on")
	argv := append([]string{"-f", os.DevNull, "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "oc", "-x", "200", "-y", "50", "-c", cwd, "--", r.Bin}, args...)
	out, err := u.tmuxCmd(argv...)
	if err != nil {
		t.Fatalf("liveopencode: tmux new-session: %v\n%s", err, out)
	}
	if u.PID, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.Fatalf("liveopencode: tmux printed no pane pid: %q", out)
	}
	return u
}

// Screen is what the TUI's terminal shows.
func (u *TUI) Screen() string {
	out, err := u.tmuxCmd("capture-pane", "-p", "-t", "oc")
	if err != nil {
		return fmt.Sprintf("(no screen: %v %s)", err, out)
	}
	return string(out)
}

// WaitScreen waits until cond holds for the screen, checking every 250 ms,
// failing the test with the screen after timeout.
func (u *TUI) WaitScreen(what string, timeout time.Duration, cond func(string) bool) string {
	u.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := u.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("liveopencode: %s: not on screen in %s; screen:\n%s", what, timeout, s)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Listening waits until the TUI's process listens on a loopback port that
// answers GET /global/health with 200 and returns its URL (the ports read
// from /proc/net/tcp by the process's socket inodes).
func (u *TUI) Listening(timeout time.Duration) string {
	u.t.Helper()
	deadline := time.Now().Add(timeout)
	probe := &http.Client{Timeout: 5 * time.Second}
	for {
		// The first port that answers as opencode: a process may hold
		// another listening socket that takes a connection and never
		// answers HTTP.
		ports := opencode.Listening(u.PID)
		for _, p := range ports {
			url := "http://" + p
			if resp, err := probe.Get(url + "/global/health"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return url
				}
			}
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("liveopencode: TUI pid %d has no port that answers GET /global/health after %s (listening: %v); screen:\n%s", u.PID, timeout, ports, u.Screen())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (u *TUI) kill() {
	_, _ = u.tmuxCmd("kill-server")
	if u.PID > 0 {
		_ = unix.Kill(u.PID, unix.SIGKILL)
	}
}

func (u *TUI) tmuxCmd(args ...string) ([]byte, error) {
	return livecc.Tmux(u.tmux, u.tmuxSock, u.Root.Env(), args...)
}
