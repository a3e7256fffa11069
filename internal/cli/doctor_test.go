package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

func TestMain(m *testing.M) {
	// No test runs an installed peerctl-mcp: a command handed over to one
	// would exec it in place of the test binary, whose other tests would
	// never run (and the package would still pass).
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, mcpProgram)); err != nil {
			path = append(path, dir)
		}
	}
	_ = os.Setenv("PATH", strings.Join(path, string(filepath.ListSeparator)))
	// Nor does any test read this machine's own harness state: a harness
	// whose folder is not named in a test's environment defaults to one
	// under $HOME (os.UserHomeDir where the test's getenv has no HOME), so
	// HOME is an empty folder of the package's own and the folders that
	// would name others are unset. (Before, a list here took in a real
	// opencode server running on the machine.)
	// Go's own folders and the pinned harnesses' cache (test/livecc) stay
	// where they are: by default they are found from HOME.
	if out, err := exec.Command("go", "env", "GOPATH", "GOMODCACHE", "GOCACHE", "GOENV").Output(); err == nil {
		vals := strings.Split(strings.TrimSpace(string(out)), "\n")
		for i, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOENV"} {
			if i < len(vals) && os.Getenv(k) == "" {
				_ = os.Setenv(k, vals[i])
			}
		}
	}
	if real, err := os.UserHomeDir(); err == nil && os.Getenv("PEERCTL_CACHE") == "" {
		_ = os.Setenv("PEERCTL_CACHE", filepath.Join(real, ".cache", "peerctl"))
	}
	home, err := os.MkdirTemp("", "peerctl-cli-home-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("HOME", home)
	for _, k := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "CODEX_HOME", "QWEN_HOME", "CLAUDE_CONFIG_DIR", "OPENCODE_DB"} {
		_ = os.Unsetenv(k)
	}
	code := m.Run()
	code = testbin.Cleanup(code)
	_ = os.RemoveAll(home)
	os.Exit(code)
}

// fakeClaude writes a shell script that answers --version and --help like
// Claude Code 2.1.328, defining every courier flag except those in drop,
// runs a courier (-p) as test/fakeclaude, and logs each argv to a file so a
// test can prove what was run.
func fakeClaude(t *testing.T, drop ...string) (path, argvLog string) {
	t.Helper()
	return fakeClaudeVersion(t, "9.9.9 (Claude Code)", drop...)
}

// fakeClaudeVersion is fakeClaude answering --version with version.
func fakeClaudeVersion(t *testing.T, version string, drop ...string) (path, argvLog string) {
	t.Helper()
	dir := t.TempDir()
	argvLog = filepath.Join(dir, "argv.log")
	dropped := map[string]bool{}
	for _, d := range drop {
		dropped[d] = true
	}
	var help strings.Builder
	help.WriteString("Usage: claude [options] [command] [prompt]\n\nOptions:\n")
	help.WriteString("  --add-dir <directories...>            More directories Claude can access\n")
	for _, f := range courierexec.New(courierexec.Config{}).Flags() {
		if dropped[f] {
			continue
		}
		switch f {
		case "-p":
			help.WriteString("  -p, --print                           Print response and exit\n")
		default:
			fmt.Fprintf(&help, "  %s <value>                 Some option that mentions -q, --zz\n", f)
		}
	}
	help.WriteString("  -h, --help                            Display help for command\n")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$1" in
--version) echo %q;;
--help) cat <<'HELP'
%sHELP
;;
-p) exec %q "$@";;
*) echo "unexpected call: $*" >&2; exit 9;;
esac
`, argvLog, version, help.String(), testbin.Build(t, testbin.FakeClaude))
	path = filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path, argvLog
}

// doctorOut is doctor --json with the harnesses' objects.
type doctorOut struct {
	wire.Doctor
	Claude claudecode.DoctorJSON `json:"claude"`
	Qwen   qwencode.DoctorJSON   `json:"qwen"`
}

func decodeDoctor(t *testing.T, r evResult) doctorOut {
	t.Helper()
	var j doctorOut
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &j), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return j
}

func problemLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "peerctl: problem: ") {
			out = append(out, l)
		}
	}
	return out
}

func TestDoctorClaude(t *testing.T) {
	healthy, healthyLog := fakeClaude(t)
	noSafe, _ := fakeClaude(t, "--safe-mode")
	noTwo, _ := fakeClaude(t, "-p", "--verbose")
	cfg := evConfigDir(t)
	tests := []struct {
		name        string
		claude      string
		wantCode    int
		wantHealth  string
		wantMissing []string
		wantProblem string
	}{
		{"missing", filepath.Join(t.TempDir(), "no-such-claude"), wire.ExitError, "fail", nil, "claude not found: install Claude Code"},
		{"lacks --safe-mode", noSafe, wire.ExitError, "fail", []string{"--safe-mode"}, "has no --safe-mode flag"},
		{"lacks -p and --verbose", noTwo, wire.ExitError, "fail", []string{"-p", "--verbose"}, "has no -p flag"},
		{"healthy", healthy, wire.ExitOK, "ok", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evRun(t, nil, nil, "doctor", "--json", "--config-dir", cfg, "--claude", tt.claude)
			assert.Equal(t, tt.wantCode, r.code, "stderr: %s", r.stderr)
			j := decodeDoctor(t, r)
			assert.Equal(t, tt.wantHealth, j.Claude.Health)
			assert.Equal(t, tt.wantCode == wire.ExitOK, j.OK)
			var missing []string
			for _, f := range j.Claude.Flags {
				if !f.Present {
					missing = append(missing, f.Flag)
				}
			}
			assert.Equal(t, tt.wantMissing, missing)
			problems := problemLines(r.stderr)
			assert.Len(t, problems, len(j.Problems), "one stderr line per problem")
			if tt.wantProblem == "" {
				assert.Empty(t, j.Problems)
				assert.Equal(t, "9.9.9 (Claude Code)", j.Claude.Version)
				assert.Len(t, j.Claude.Flags, len(courierexec.New(courierexec.Config{}).Flags()))
				return
			}
			require.NotEmpty(t, j.Problems)
			assert.Contains(t, j.Problems[0], tt.wantProblem)
			assert.Len(t, j.Problems, max(1, len(tt.wantMissing)), "one problem per missing flag")
		})
	}
	// The doctor asked for --version and --help, then ran one courier.
	log, err := os.ReadFile(healthyLog)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	require.Len(t, lines, 3, "log: %s", log)
	assert.Equal(t, []string{"--version", "--help"}, lines[:2])
	assert.Equal(t, strings.Join(courierexec.New(courierexec.Config{}).Args(), " "), lines[2])
}

func TestDoctorRegistry(t *testing.T) {
	claude, _ := fakeClaude(t)
	socks := evSocketDir(t)
	self := os.Getpid()
	live := evLiveRecord(t, self, "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock"))
	stale := evLiveRecord(t, self, "22222222-aaaa-4aaa-8aaa-000000000002", "gone", "/src/gone", filepath.Join(socks, "g.sock"))
	stale.PID = testproc.DeadPID(t)
	populated := evConfigDir(t, live, stale)
	require.NoError(t, os.WriteFile(filepath.Join(populated, "sessions", "77.json"), []byte("{not json"), 0o600))

	fileInPlace := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fileInPlace, "sessions"), []byte("a file, not a folder"), 0o600))

	tests := []struct {
		name       string
		cfg        string
		skip       string
		wantCode   int
		wantHealth string
		wantCounts map[string]int
		wantText   string
	}{
		{"populated", populated, "", wire.ExitOK, "ok", map[string]int{"live": 1, "stale": 1, "malformed": 1}, ""},
		{"missing folder", filepath.Join(t.TempDir(), "never"), "", wire.ExitOK, "warn", map[string]int{}, "does not exist"},
		{"file in place of the folder", fileInPlace, "", wire.ExitError, "fail", map[string]int{}, "not a directory"},
		{"folder without read permission", unreadableConfig(t), rootSkip(), wire.ExitError, "fail", map[string]int{}, "permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			r := evRun(t, nil, nil, "doctor", "--json", "--config-dir", tt.cfg, "--claude", claude)
			assert.Equal(t, tt.wantCode, r.code, "stderr: %s", r.stderr)
			j := decodeDoctor(t, r)
			assert.Equal(t, tt.wantHealth, j.Registry.Health)
			assert.Equal(t, filepath.Join(tt.cfg, "sessions"), j.Registry.Dir)
			for _, v := range []string{"live", "stale", "reused", "foreign", "misnamed", "headless", "malformed", "unreadable"} {
				assert.Contains(t, j.Registry.Counts, v)
				assert.Equal(t, tt.wantCounts[v], j.Registry.Counts[v], "count of %s", v)
			}
			if tt.wantText != "" {
				assert.Contains(t, strings.Join(append(j.Problems, j.Warnings...), "\n"), tt.wantText)
			}
			if tt.wantCode != wire.ExitOK {
				assert.Len(t, problemLines(r.stderr), 1)
			}
		})
	}
}

// unreadableConfig makes a config dir whose sessions folder has mode 0000.
func unreadableConfig(t *testing.T) string {
	cfg := evConfigDir(t)
	dir := filepath.Join(cfg, "sessions")
	require.NoError(t, os.Chmod(dir, 0))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	return cfg
}

func rootSkip() string {
	if os.Geteuid() == 0 {
		return "running as root: mode 0000 does not stop root from reading, so EACCES cannot be produced (the file-in-place case covers an unreadable folder)"
	}
	return ""
}

func TestDoctorSocketFolder(t *testing.T) {
	claude, _ := fakeClaude(t)
	tests := []struct {
		name       string
		mode       os.FileMode
		chownTo    int // -1: keep
		wantCode   int
		wantHealth string
		wantText   string
	}{
		{"0700 ours", 0o700, -1, wire.ExitOK, "ok", ""},
		{"0755 readable by others", 0o755, -1, wire.ExitOK, "warn", "mode 0755, want 0700"},
		{"0777 writable by others", 0o777, -1, wire.ExitError, "fail", "lets group or others write"},
		{"0770 writable by group", 0o770, -1, wire.ExitError, "fail", "lets group or others write"},
		{"another owner", 0o700, 65534, wire.ExitError, "fail", "owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			socks := evSocketDir(t)
			require.NoError(t, os.Chmod(socks, tt.mode))
			if tt.chownTo >= 0 {
				if os.Geteuid() != 0 {
					t.Skip("changing a folder's owner needs root")
				}
				require.NoError(t, os.Chown(socks, tt.chownTo, tt.chownTo))
			}
			stale := evLiveRecord(t, os.Getpid(), "22222222-aaaa-4aaa-8aaa-000000000002", "gone", "/src/gone", filepath.Join(t.TempDir(), "x", "g.sock"))
			stale.PID = testproc.DeadPID(t)
			cfg := evConfigDir(t,
				evLiveRecord(t, testproc.Sleeper(t), "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock")),
				stale)
			r := evRun(t, nil, nil, "doctor", "--json", "--config-dir", cfg, "--claude", claude)
			assert.Equal(t, tt.wantCode, r.code, "stderr: %s", r.stderr)
			j := decodeDoctor(t, r)
			require.Len(t, j.SocketDirs, 1, "only live records' socket folders are checked")
			sd := j.SocketDirs[0]
			assert.Equal(t, socks, sd.Dir)
			assert.Equal(t, tt.wantHealth, sd.Health)
			assert.Equal(t, fmt.Sprintf("%04o", tt.mode), sd.Mode)
			assert.Equal(t, 1, sd.Sessions)
			assert.Equal(t, tt.chownTo < 0, sd.Ours)
			if tt.wantText != "" {
				assert.Contains(t, sd.Problem, tt.wantText)
			}
		})
	}
}

func TestDoctorSession(t *testing.T) {
	claude, _ := fakeClaude(t)
	socks := evSocketDir(t)
	self := os.Getpid()
	cfgInside := evConfigDir(t, evLiveRecord(t, self, "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock")))
	cfgEmpty := evConfigDir(t)
	tests := []struct {
		name       string
		cfg        string
		env        map[string]string
		wantInside bool
		wantVia    string
		wantVars   []string
	}{
		{"record for our own process", cfgInside, nil, true, "ancestor", []string{}},
		{"session variables only", cfgEmpty, map[string]string{"CLAUDECODE": "1", "CLAUDE_CODE_MESSAGING_TOKEN": "secret-value"}, true, "none", []string{"CLAUDECODE", "CLAUDE_CODE_MESSAGING_TOKEN"}},
		{"provider setting is not a session", cfgEmpty, map[string]string{"CLAUDE_CODE_USE_BEDROCK": "1"}, false, "none", []string{"CLAUDE_CODE_USE_BEDROCK"}},
		{"outside", cfgEmpty, nil, false, "none", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evRun(t, tt.env, nil, "doctor", "--json", "--config-dir", tt.cfg, "--claude", claude)
			require.Equal(t, wire.ExitOK, r.code, "stderr: %s", r.stderr)
			j := decodeDoctor(t, r)
			assert.Equal(t, tt.wantInside, j.Session.Inside)
			assert.Equal(t, tt.wantVia, j.Session.Via)
			assert.Equal(t, tt.wantVars, j.Session.EnvVars)
			assert.NotContains(t, r.stdout, "secret-value", "variable values are never printed")
			if tt.wantVia == "ancestor" {
				assert.Equal(t, self, j.Session.PID)
				assert.Equal(t, "alpha", j.Session.Name)
			}
		})
	}
}

func TestDoctorText(t *testing.T) {
	claude, _ := fakeClaude(t, "--verbose")
	r := evRun(t, nil, nil, "doctor", "--config-dir", filepath.Join(t.TempDir(), "none"), "--claude", claude)
	assert.Equal(t, wire.ExitError, r.code)
	assert.Contains(t, r.stdout, "claude    fail")
	n := len(courierexec.New(courierexec.Config{}).Flags())
	assert.Contains(t, r.stdout, fmt.Sprintf("courier flags: %d of %d present, missing --verbose", n-1, n))
	assert.Contains(t, r.stdout, "registry  warn")
	assert.Contains(t, r.stdout, "The courier (the default transport) cannot run here: 1 problem.")
	assert.Equal(t, []string{"peerctl: problem: claude: " + claude + " (Claude Code 9.9.9) has no --verbose flag in --help; the courier needs it"}, problemLines(r.stderr))
}

// TestDoctorMissingClaudeSaysWhatStillWorks: without claude only the
// courier (the default transport) is broken: doctor still fails, and says
// so in those words, naming what works without claude.
func TestDoctorMissingClaudeSaysWhatStillWorks(t *testing.T) {
	cfg := evConfigDir(t)
	r := evRun(t, nil, nil, "doctor", "--config-dir", cfg, "--claude", filepath.Join(t.TempDir(), "no-such-claude"))
	assert.Equal(t, wire.ExitError, r.code, "the default transport is broken")
	problems := problemLines(r.stderr)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0], "install Claude Code")
	assert.Contains(t, problems[0], "send --transport socket, list, show and watch do not need claude")
	assert.NotContains(t, r.stdout, "not usable")
	// Said once: the summary is short and does not repeat the problem.
	assert.Contains(t, r.stdout, "\nThe courier (the default transport) cannot run here: 1 problem.\n")
	assert.NotContains(t, r.stdout, "do not need claude")
	assert.NotContains(t, r.stderr, "no-such-claude", "the row says where it was looked for")
}

// TestDoctorCourier: doctor runs one courier against peerctl's endpoint
// with a turn that sends nothing, and says whether it talked and was
// offered SendMessage; no login is looked for.
func TestDoctorCourier(t *testing.T) {
	claude, _ := fakeClaude(t)
	for _, tt := range []struct {
		scenario string
		code     int
		health   string
		problem  string
	}{
		{"sent", wire.ExitOK, "ok", ""},
		{"no_send_tool", wire.ExitError, "fail", "did not offer SendMessage to the courier (tools offered: ListAgents)"},
		{"not_logged_in", wire.ExitError, "fail", "a courier run that sends nothing failed"},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Setenv("FAKECLAUDE_SCENARIO", tt.scenario) // the courier starts from the process environment
			env := map[string]string{}
			r := evRun(t, env, nil, "doctor", "--json", "--config-dir", evConfigDir(t), "--claude", claude)
			require.Equal(t, tt.code, r.code, r.stderr)
			j := decodeDoctor(t, r)
			assert.Equal(t, tt.health, j.Claude.Health)
			require.NotNil(t, j.Claude.Courier)
			if tt.problem == "" {
				assert.True(t, j.Claude.Courier.Talks)
				assert.Contains(t, j.Claude.Courier.Tools, "SendMessage")
				assert.Positive(t, j.Claude.Courier.StartupMs)
				text := evRun(t, env, nil, "doctor", "--config-dir", evConfigDir(t), "--claude", claude)
				assert.Regexp(t, `(?m)^courier\s+ok\s+talks to peerctl's endpoint, offered SendMessage; start-up \d+ ms`, text.stdout)
				assert.NotContains(t, text.stdout, "DeferredToolPlaceholder", "Claude Code's internal tool names stay in --json")
				assert.NotContains(t, text.stdout, "login")
				return
			}
			require.NotEmpty(t, j.Problems)
			assert.Contains(t, j.Problems[0], tt.problem)
		})
	}
}

// TestDoctorCourierTooOldForUDS: a courier whose Claude Code is older than
// 2.1.328 (2.1.224 offers SendMessage, but not to uds: addresses, so every
// courier send fails) is a problem with its remedy, exit 1, although its
// courier run talks and is offered SendMessage.
func TestDoctorCourierTooOldForUDS(t *testing.T) {
	for version, ok := range map[string]bool{
		"2.1.224 (Claude Code)": false,
		"2.1.328 (Claude Code)": true,
		"2.1.332 (Claude Code)": true,
	} {
		t.Run(version, func(t *testing.T) {
			claude, _ := fakeClaudeVersion(t, version)
			r := evRun(t, nil, nil, "doctor", "--json", "--config-dir", evConfigDir(t), "--claude", claude)
			j := decodeDoctor(t, r)
			require.NotNil(t, j.Claude.Courier)
			assert.True(t, j.Claude.Courier.Talks, "the courier run itself works")
			if ok {
				assert.Equal(t, wire.ExitOK, r.code, r.stderr)
				assert.Equal(t, "ok", j.Claude.Health)
				assert.Empty(t, j.Problems)
				return
			}
			assert.Equal(t, wire.ExitError, r.code, r.stderr)
			assert.Equal(t, "fail", j.Claude.Health)
			require.Len(t, j.Problems, 1)
			assert.Contains(t, j.Problems[0], "(Claude Code 2.1.224) is older than 2.1.328")
			assert.Contains(t, j.Problems[0], "install Claude Code 2.1.328 or newer")
			assert.Equal(t, []string{"peerctl: problem: " + j.Problems[0]}, problemLines(r.stderr))
		})
	}
}

// TestDoctorWarnsOnce: a missing registry folder is stated once in the
// text output, on the registry row.
func TestDoctorWarnsOnce(t *testing.T) {
	claude, _ := fakeClaude(t)
	missing := filepath.Join(t.TempDir(), "never")
	r := evRun(t, map[string]string{"ANTHROPIC_API_KEY": "k"}, nil, "doctor", "--config-dir", missing, "--claude", claude)
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout+r.stderr, "does not exist"), r.stdout)
	assert.Regexp(t, `(?m)^registry\s+warn\s+.*does not exist; no Claude Code session has run with this config dir$`, r.stdout)
}

// Text from claude --version and socket folder paths from the registry
// reach the terminal escaped: no ESC, BEL or C1 control gets through, in
// the table or on the problem lines (with --json too).
// (doctor --json's stdout is JSON: data, escaped by JSON's rules.)
func TestDoctorEscapesControlSequences(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	script := "#!/bin/sh\ncase \"$1\" in\n--version) printf '9.9.9 \\033]0;owned\\007\\033[2J\\302\\233c (Claude Code)\\n';;\n--help) echo 'Usage: claude';;\n*) exit 9;;\nesac\n"
	require.NoError(t, os.WriteFile(claude, []byte(script), 0o755))
	socks := filepath.Join(t.TempDir(), "s\x1b]0;owned\x07\x1b[31m")
	require.NoError(t, os.Mkdir(socks, 0o700))
	require.NoError(t, os.Chmod(socks, 0o777)) // a problem: others may write
	cfg := evConfigDir(t, evLiveRecord(t, testproc.Sleeper(t), "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock")))
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, append(args, "--config-dir", cfg, "--claude", claude)...)
			require.Equal(t, wire.ExitError, r.code, "stderr: %s", r.stderr)
			probs := problemLines(r.stderr)
			require.NotEmpty(t, probs)
			assert.Contains(t, r.stderr, "socket folder")
			outs := map[string]string{"stderr": r.stderr}
			if len(args) == 1 {
				outs["stdout"] = r.stdout // --json's stdout is data: JSON escapes what it must
			}
			for name, out := range outs {
				assert.NotContains(t, out, "\x1b", name)
				assert.NotContains(t, out, "\x07", name)
				assert.NotContains(t, out, "\u009b", name)
			}
		})
	}
}

// send --dry-run --transport socket shows the socket path escaped.
func TestSendDryRunSocketEscapesPath(t *testing.T) {
	socks := filepath.Join(t.TempDir(), "s\x1b]0;owned\x07")
	require.NoError(t, os.Mkdir(socks, 0o700))
	rec := evLiveRecord(t, testproc.Sleeper(t), "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock"))
	listenAll(t, rec)
	cfg := evConfigDir(t, rec)
	r := evRun(t, nil, nil, "send", "--dry-run", "--transport", "socket", "--config-dir", cfg, "alpha", "hi")
	require.Equal(t, wire.ExitOK, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stdout, "socket: ")
	assert.NotContains(t, r.stdout, "\x1b")
	assert.NotContains(t, r.stdout, "\x07")
}

// Without a peerctl on PATH, the plugin's MCP server fails with Claude
// Code's bare "ENOENT": doctor says so, and how to fix it.
func TestDoctorMCPSaysPeerctlIsNotOnPath(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	c := newFactory(strings.NewReader(""), io.Discard, io.Discard, func(string) string { return "" })
	d := newMCPDoctor(c).check(context.Background())
	assert.Equal(t, "warn", d.Health)
	assert.Contains(t, d.Note, `no peerctl on PATH: the Claude Code plugin's MCP server (the command peerctl mcp) fails to start with "spawn peerctl ENOENT"`)

	require.NoError(t, os.WriteFile(filepath.Join(empty, "peerctl"), []byte("#!/bin/sh\n"), 0o755))
	d = newMCPDoctor(c).check(context.Background())
	assert.NotContains(t, d.Note, "ENOENT")
}

// On a terminal doctor's long texts (the mcp row's warning is hundreds
// of columns) are wrapped under their column; elsewhere they stay whole.
func TestDoctorTextsWrapToTheTerminal(t *testing.T) {
	long := strings.Repeat("word ", 60)
	rows := func() *table {
		var tw table
		tw.add("claude", "ok", "short")
		tw.add("mcp", "warn", cell(long))
		return &tw
	}
	tw := rows()
	tw.wrapLast(80)
	assert.Equal(t, "short", tw.rows[0][2])
	for i, line := range strings.Split(tw.rows[1][2], "\n") {
		assert.LessOrEqual(t, len(line), 80, line)
		if i > 0 {
			assert.True(t, strings.HasPrefix(line, strings.Repeat(" ", len("claude  warn  "))), "under its column: %q", line)
		}
	}
	assert.Equal(t, strings.Fields(long), strings.Fields(tw.rows[1][2]), "every word kept")
	tw = rows()
	tw.wrapLast(0)
	assert.Equal(t, cell(long), tw.rows[1][2], "not a terminal: one line")
}

// A harness's program that is not found is said one way on every row
// (claude, qwen, codex, opencode: "PROGRAM not found (find "PROGRAM":
// ...)"), and every optional harness whose program is not found is
// skipped, opencode's as qwen's and codex's; a claude that is needed (its
// config dir named) fails in the same words.
func TestDoctorProgramNotFoundOneWay(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	rows := func(args ...string) map[string]wire.DoctorRow {
		r := evRun(t, nil, nil, append([]string{"doctor", "--json"}, args...)...)
		var doc struct {
			Rows []wire.DoctorRow `json:"rows"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout+r.stderr)
		out := map[string]wire.DoctorRow{}
		for _, row := range doc.Rows {
			out[row.Check] = row
		}
		return out
	}
	notFound := func(prog string) string {
		return prog + ` not found (find "` + prog + `": executable file not found in $PATH)`
	}
	got := rows()
	for _, prog := range []string{"claude", "qwen", "codex", "opencode"} {
		row, ok := got[prog]
		require.True(t, ok, "a %s row: %+v", prog, got)
		assert.Equal(t, "skip", row.Health, "%s: %s", prog, row.Text)
		assert.True(t, strings.HasPrefix(row.Text, notFound(prog)), "%s: %s", prog, row.Text)
	}
	row := rows("--config-dir", filepath.Join(t.TempDir(), "none"))["claude"]
	assert.Equal(t, "fail", row.Health, row.Text)
	assert.Equal(t, notFound("claude"), row.Text)
}
