//go:build unix

package courierexec_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
	"github.com/peerctl/peerctl/test/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

const testGrace = 500 * time.Millisecond

// courier is one courier transport wired to the fake claude.
type courier struct {
	t   *courierexec.Transport
	rec string // the fake's record folder
}

type fakeOpts struct {
	scenario string
	env      []string // added to a minimal environment
	timeout  time.Duration
	config   courierexec.Config // Program, Env, Timeout and Grace are filled in
}

func newCourier(t *testing.T, o fakeOpts) courier {
	t.Helper()
	rec := t.TempDir()
	cfg := o.config
	cfg.Program = testbin.Build(t, testbin.FakeClaude)
	cfg.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"FAKECLAUDE_RECORD=" + rec, "FAKECLAUDE_SCENARIO=" + o.scenario}, o.env...)
	cfg.Timeout = o.timeout
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	cfg.Grace = testGrace
	return courier{t: courierexec.New(cfg), rec: rec}
}

var target = domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
	SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: "/nonexistent/4242.sock"}

func msg(t testing.TB, text string) domain.Message {
	t.Helper()
	m, err := domain.NewMessage(text)
	require.NoError(t, err)
	return m
}

// started reports whether the fake ran, and its pid and process group.
func (c courier) started(t *testing.T) (ok bool, pid, pgid int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.rec, "pid"))
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, 0
	}
	require.NoError(t, err)
	_, err = fmt.Sscan(string(b), &pid, &pgid)
	require.NoError(t, err)
	return true, pid, pgid
}

func (c courier) children(t *testing.T) []int {
	b, err := os.ReadFile(filepath.Join(c.rec, "children"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, n)
	}
	return pids
}

// sent returns the texts the fake passed to a successful SendMessage for name.
func (c courier) sent(t testing.TB, name string) []string {
	f, err := os.Open(filepath.Join(c.rec, "sent.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct{ To, Message string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s))
		if s.To == name {
			out = append(out, s.Message)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// requireGroupGone fails unless every process of the fake's group (and each
// recorded child) is gone or a zombie within a bound. A zombie holds nothing
// and cannot run; its reaping is its parent's business.
func (c courier) requireGroupGone(t *testing.T) {
	t.Helper()
	ok, _, pgid := c.started(t)
	if !ok {
		return
	}
	// Never scan (or kill) our own group: a courier that shares it is a
	// failure in itself.
	require.NotEqual(t, syscall.Getpgrp(), pgid, "the courier runs in the test's own process group")
	pids := c.children(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := groupMembers(pgid)
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			require.Empty(t, left, "processes of the courier's group %d outlived the call", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live, non-zombie processes of group pgid.
func groupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive: the pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestCourierTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, tc transporttest.Case) transporttest.Setup {
		scenario := map[transporttest.Far]string{
			transporttest.Accept: "sent",
			transporttest.Hang:   "fork_hang_ignore_term",
			transporttest.Fail:   "not_logged_in",
		}[tc.Far]
		c := newCourier(t, fakeOpts{scenario: scenario, timeout: tc.Timeout})
		t.Cleanup(func() { c.requireGroupGone(t) })
		tgt := transporttest.Session(t, target)
		return transporttest.Setup{Transport: c.t, Target: tgt, Grace: testGrace,
			Received: func() []string { return c.sent(t, tgt.Name()) }}
	})
}

// TestCourierVerdicts runs the fake claude through every output family and
// checks the verdict, the reason and that the detail shows what happened.
func TestCourierVerdicts(t *testing.T) {
	tests := []struct {
		scenario string
		word     string
		timeout  time.Duration
		// want is "" for success, else a piece of the failure detail.
		want string
		// stdoutHead is a piece of stdout the detail must show.
		stdoutHead string
	}{
		{scenario: "sent"},
		{scenario: "banner", stdoutHead: ""},
		{scenario: "sent_leave_child", timeout: 20 * time.Second}, // WaitDelay ends the wait for the child's pipes
		{scenario: "word", word: " SENT\n"},
		{scenario: "object", want: "no transcript to prove a SendMessage call", stdoutHead: `{"is_error":false`},
		{scenario: "is_error", want: "courier reported an error", stdoutHead: `[{"claude_code_version"`},
		{scenario: "max_turns", want: "error_max_turns: Reached maximum number of turns (2)"},
		{scenario: "empty_result", want: "result is empty"},
		{scenario: "no_result", want: "result is empty"},
		{scenario: "no_output", want: "printed nothing"},
		{scenario: "no_call", want: "made no SendMessage call"},
		{scenario: "truncated", want: "altered text"},
		{scenario: "other_name", want: `went to "someone-else", not "proj-ab"`},
		{scenario: "twice", want: `made 2 SendMessage calls (to "proj-ab", "someone-else")`},
		{scenario: "tool_error", want: "SendMessage call failed"},
		{scenario: "not_found", want: `no agent named "proj-ab"`},
		{scenario: "word", word: "NOT SENT", want: `answered "NOT SENT", not SENT`},
		{scenario: "word", word: "UNSENT", want: `answered "UNSENT"`},
		{scenario: "word", word: "sent?", want: `answered "sent?"`},
		{scenario: "word", word: "sent", want: `answered "sent"`},
		{scenario: "word", word: "SENT.", want: `answered "SENT."`},
		{scenario: "word", word: "SENT\nSENT", want: `answered "SENT\nSENT"`},
		{scenario: "exit1_sent", want: "exited with status 1"},
		{scenario: "unknown_option", want: `stderr: "error: unknown option '--bogus-flag'"`},
		{scenario: "not_logged_in", want: "Not logged in · Please run /login", stdoutHead: `{"duration_api_ms":0`},
		{scenario: "sent_then_hang", timeout: time.Second, want: "timed out after 1s; its process group was ended", stdoutHead: `[{"claude_code_version"`},
		{scenario: "fork_hang", timeout: time.Second, want: "timed out after 1s"},
		{scenario: "fork_hang_ignore_term", timeout: time.Second, want: "timed out after 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario+"/"+tt.word, func(t *testing.T) {
			t.Parallel()
			c := newCourier(t, fakeOpts{scenario: tt.scenario, env: []string{"FAKECLAUDE_WORD=" + tt.word}, timeout: tt.timeout})
			start := time.Now()
			rcpt, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hello from the test"))
			elapsed := time.Since(start)
			c.requireGroupGone(t)
			if tt.timeout > 0 {
				bound := tt.timeout + testGrace + 3*time.Second
				if tt.want == "" {
					bound = testGrace + 3*time.Second // success must not wait for the timeout
				}
				assert.LessOrEqual(t, elapsed, bound, "the call outlived its bound")
			}
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "sent", rcpt.Outcome)
				assert.Equal(t, []string{"hello from the test"}, c.sent(t, "proj-ab"))
				return
			}
			require.Error(t, err)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "not a refusal: %v", err)
			assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
			assert.Contains(t, r.Detail, tt.want)
			assert.Contains(t, r.Detail, "stdout: ", "the detail shows stdout's head")
			assert.Contains(t, r.Detail, "stderr: ", "the detail shows stderr's head")
			if tt.stdoutHead != "" {
				assert.Contains(t, r.Detail, "stdout: "+strings.TrimSuffix(strconv.Quote(tt.stdoutHead), `"`))
			}
		})
	}
}

// TestCourierArgvCarriesNoText: the prompt goes through stdin, argv is the
// least-privilege flag set only, at the message cap too.
func TestCourierArgvCarriesNoText(t *testing.T) {
	for name, text := range map[string]string{
		"short":          "hello --model opus",
		"flag lookalike": "--dangerously-skip-permissions",
		"at the cap":     transporttest.Exactly(domain.MaxMessageBytes),
	} {
		t.Run(name, func(t *testing.T) {
			c := newCourier(t, fakeOpts{scenario: "sent"})
			_, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, text))
			require.NoError(t, err)
			var argv []string
			b, err := os.ReadFile(filepath.Join(c.rec, "argv.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &argv))
			assert.Equal(t, []string{"-p", "--model", "haiku", "--tools", "ListAgents,SendMessage",
				"--allowedTools", "ListAgents,SendMessage", "--safe-mode", "--setting-sources", "user",
				"--no-session-persistence", "--output-format", "json", "--verbose"}, argv)
			for _, a := range argv {
				assert.NotContains(t, a, text[:min(len(text), 16)])
			}
			stdin, err := os.ReadFile(filepath.Join(c.rec, "stdin"))
			require.NoError(t, err)
			assert.Contains(t, string(stdin), "\n"+text+"\n", "the text travels on stdin")
		})
	}
}

// TestCourierScrubsEnvironment: the calling session's identity never reaches
// the courier; what it needs to run and to read the same registry does.
func TestCourierScrubsEnvironment(t *testing.T) {
	env := []string{
		"CLAUDECODE=1",
		"CLAUDE_CODE_ENTRYPOINT=cli",
		"CLAUDE_CODE_MESSAGING_SOCKET=/run/caller.sock",
		"CLAUDE_CODE_MESSAGING_TOKEN=caller-secret",
		"CLAUDE_CODE_SSE_PORT=41234",
		"CLAUDE_CODE_SESSION_ID=caller-session",
		"CLAUDE_CODE_USE_BEDROCK=1",
		"CLAUDE_CONFIG_DIR=/from/the/environment",
		"ANTHROPIC_API_KEY=sk-test",
		"ANTHROPIC_BASE_URL=https://proxy.example",
		"HTTPS_PROXY=http://proxy.example:3128",
		"https_proxy=http://proxy.example:3128",
		"NO_PROXY=localhost",
		"LANG=C.UTF-8",
		"LC_ALL=de_DE.UTF-8",
	}
	gone := []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_MESSAGING_SOCKET",
		"CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_SSE_PORT", "CLAUDE_CODE_SESSION_ID"}
	kept := []string{"PATH", "HOME", "CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"HTTPS_PROXY", "https_proxy", "NO_PROXY", "LANG", "LC_ALL"}
	for _, tt := range []struct {
		name, configDir, wantConfigDir string
	}{
		{"config dir from the environment", "", "/from/the/environment"},
		{"config dir from peerctl", "/peerctl/config", "/peerctl/config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCourier(t, fakeOpts{scenario: "env", env: env, config: courierexec.Config{ConfigDir: tt.configDir}})
			_, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hi"))
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(c.rec, "env"))
			require.NoError(t, err)
			got := map[string][]string{}
			for _, kv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				got[k] = append(got[k], v)
			}
			for _, k := range gone {
				assert.NotContains(t, got, k, "%s reached the courier", k)
			}
			for _, k := range kept {
				assert.Contains(t, got, k, "%s did not reach the courier", k)
			}
			assert.Equal(t, []string{tt.wantConfigDir}, got["CLAUDE_CONFIG_DIR"])
		})
	}
}

func TestScrubEnv(t *testing.T) {
	in := []string{"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_MESSAGING_TOKEN=x",
		"CLAUDE_CODE_OAUTH_TOKEN=o", "CLAUDE_CODE_USE_VERTEX=1", "CLAUDE_CONFIG_DIR=/a", "PATH=/bin",
		"CLAUDECODE_NOT_REALLY=1", "XCLAUDE_CODE_X=1", "ANTHROPIC_MODEL=m"}
	assert.Equal(t, []string{"CLAUDE_CODE_OAUTH_TOKEN=o", "CLAUDE_CODE_USE_VERTEX=1", "CLAUDE_CONFIG_DIR=/a",
		"PATH=/bin", "CLAUDECODE_NOT_REALLY=1", "XCLAUDE_CODE_X=1", "ANTHROPIC_MODEL=m"}, courierexec.ScrubEnv(in, ""))
	assert.Equal(t, []string{"CLAUDE_CODE_OAUTH_TOKEN=o", "CLAUDE_CODE_USE_VERTEX=1", "PATH=/bin",
		"CLAUDECODE_NOT_REALLY=1", "XCLAUDE_CODE_X=1", "ANTHROPIC_MODEL=m", "CLAUDE_CONFIG_DIR=/b"}, courierexec.ScrubEnv(in, "/b"))
}

// TestCourierOwnProcessGroup: the fake runs in a group of its own, not ours.
func TestCourierOwnProcessGroup(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	_, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hi"))
	require.NoError(t, err)
	ok, pid, pgid := c.started(t)
	require.True(t, ok)
	assert.Equal(t, pid, pgid, "the courier leads its own process group")
	assert.NotEqual(t, syscall.Getpgrp(), pgid)
}

func TestCourierCannotStart(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600))
	for name, program := range map[string]string{
		"absent path":    filepath.Join(t.TempDir(), "no-such-claude"),
		"not on PATH":    "no-such-claude-program",
		"not executable": notExec,
	} {
		t.Run(name, func(t *testing.T) {
			tr := courierexec.New(courierexec.Config{Program: program, Env: []string{"PATH=" + t.TempDir()}})
			_, err := tr.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hi"))
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "not a refusal: %v", err)
			assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
			assert.Contains(t, r.Detail, "cannot start the courier")
			assert.Contains(t, r.Detail, program)

			// A dry run fails the same way: Plan refuses identically.
			_, perr := tr.Plan(transporttest.Session(t, target), msg(t, "hi"))
			pr, ok := domain.AsRefusal(perr)
			require.True(t, ok, "Plan of a program that cannot start: want a refusal, got %v", perr)
			assert.Equal(t, r.Reason, pr.Reason)
			assert.Equal(t, r.Detail, pr.Detail)
		})
	}
}

// cwd is the working directory the fake recorded.
type cwd struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	UID  int    `json:"uid"`
}

func (c courier) cwd(t *testing.T) cwd {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.rec, "cwd.json"))
	require.NoError(t, err)
	var d cwd
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.Path, "the fake recorded no working directory: %s", b)
	return d
}

// TestCourierRunsInAPrivateFolder: by default every run gets a folder of its
// own, 0700 and ours, removed after the run (a time-out too), never a shared
// one like the temp dir, where anyone can plant .claude/settings.json.
func TestCourierRunsInAPrivateFolder(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		timeout  time.Duration
		wantErr  bool
	}{
		{"sent", 0, false},
		{"not_found", 0, true},
		{"fork_hang", 300 * time.Millisecond, true},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			var dirs []string
			for range 2 {
				c := newCourier(t, fakeOpts{scenario: tt.scenario, timeout: tt.timeout})
				_, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hi"))
				assert.Equal(t, tt.wantErr, err != nil, "err: %v", err)
				d := c.cwd(t)
				assert.NotEqual(t, filepath.Clean(os.TempDir()), filepath.Clean(d.Path), "the courier ran in the shared temp dir")
				assert.Equal(t, "700", d.Mode, "mode of %s", d.Path)
				assert.Equal(t, os.Getuid(), d.UID, "owner of %s", d.Path)
				_, err = os.Lstat(d.Path)
				assert.ErrorIs(t, err, os.ErrNotExist, "the private folder %s outlived the call", d.Path)
				dirs = append(dirs, d.Path)
			}
			assert.NotEqual(t, dirs[0], dirs[1], "two runs shared a folder")
		})
	}
}

// TestCourierExplicitDir: a Dir the caller set is used as is and kept.
func TestCourierExplicitDir(t *testing.T) {
	dir := t.TempDir()
	c := newCourier(t, fakeOpts{scenario: "sent", config: courierexec.Config{Dir: dir}})
	_, err := c.t.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hi"))
	require.NoError(t, err)
	got, err := filepath.EvalSymlinks(c.cwd(t).Path)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.DirExists(t, dir)
}

// TestCourierIgnoresProjectSettings: argv says --setting-sources user, so a
// project's .claude/settings.json is never read even in a folder someone
// else could write.
func TestCourierIgnoresProjectSettings(t *testing.T) {
	tr := courierexec.New(courierexec.Config{})
	args := tr.Args()
	i := slices.Index(args, "--setting-sources")
	require.GreaterOrEqual(t, i, 0, "argv %q has no --setting-sources", args)
	require.Less(t, i+1, len(args))
	assert.Equal(t, "user", args[i+1])
	assert.Contains(t, tr.Flags(), "--setting-sources")
}

func TestCourierPlan(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nexit 9\n"), 0o755))
	dir := t.TempDir()
	tr := courierexec.New(courierexec.Config{Program: prog, Dir: dir})
	p, err := tr.Plan(transporttest.Session(t, target), msg(t, "plan me"))
	require.NoError(t, err)
	assert.Equal(t, "courier", p.Transport)
	assert.Equal(t, prog, p.Program)
	assert.Equal(t, append([]string{prog}, tr.Args()...), p.Argv)
	assert.Equal(t, dir, p.Dir)
	assert.Contains(t, p.Stdin, "\nplan me\n")
	assert.Empty(t, p.Socket)

	def, err := courierexec.New(courierexec.Config{Program: prog}).Plan(transporttest.Session(t, target), msg(t, "plan me"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(os.TempDir(), "peerctl-courier-*"), def.Dir, "the default plan shows the private folder's pattern")
}

// TestCourierRelativeProgram: a relative --claude path means relative to the
// caller's working directory, not to the courier's (the temp dir).
func TestCourierRelativeProgram(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	prog := testbin.Build(t, testbin.FakeClaude)
	t.Chdir(filepath.Dir(prog))
	cfg := c.t.Config()
	cfg.Program = "." + string(filepath.Separator) + filepath.Base(prog)
	rel := courierexec.New(cfg)
	p, err := rel.Plan(transporttest.Session(t, target), msg(t, "plan"))
	require.NoError(t, err)
	assert.Equal(t, prog, p.Program, "the plan names the program a run starts: absolute")
	_, err = rel.Deliver(context.Background(), transporttest.Session(t, target), msg(t, "hello from the test"))
	require.NoError(t, err)
	assert.Equal(t, []string{"hello from the test"}, c.sent(t, "proj-ab"))
}

// TestCourierRefusesARecordClaudeCodeDoesNotList: Claude Code 2.1.328 drops
// a record that starts with a UTF-8 BOM (peerctl reads it), so the
// courier's SendMessage cannot find the target and could pick another
// session of that name it can see: refuse before anything runs, in Plan too.
func TestCourierRefusesARecordClaudeCodeDoesNotList(t *testing.T) {
	rec := target
	rec.BOM = true
	tr := courierexec.New(courierexec.Config{Program: "/bin/true"})
	for name, call := range map[string]func() error{
		"deliver": func() error {
			_, err := tr.Deliver(context.Background(), transporttest.Session(t, rec), msg(t, "hi"))
			return err
		},
		"plan": func() error { _, err := tr.Plan(transporttest.Session(t, rec), msg(t, "hi")); return err },
	} {
		r, ok := domain.AsRefusal(call())
		require.True(t, ok, name)
		assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason, name)
		assert.Contains(t, r.Detail, "byte-order mark", name)
		assert.Contains(t, r.Detail, "--transport socket", name)
	}
}
