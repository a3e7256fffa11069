package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jqfilter"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// Every command with --json has --jq (and -q, as gh has), and its help says so.
func TestEveryJSONCommandHasJQ(t *testing.T) {
	root := newRootCmd(newFactory(nil, nil, nil, func(string) string { return "" }))
	var walk func(cmd *cobra.Command)
	n := 0
	walk = func(cmd *cobra.Command) {
		if cmd.Flags().Lookup("json") != nil {
			n++
			t.Run(cmd.CommandPath(), func(t *testing.T) {
				f := cmd.Flags().Lookup("jq")
				require.NotNil(t, f, "--jq")
				assert.Equal(t, "q", f.Shorthand)
				assert.Contains(t, f.Usage, "implies --json")
			})
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.GreaterOrEqual(t, n, 15, "the --json commands")
}

func TestJQ(t *testing.T) {
	cfg := evConfigDir(t,
		evLiveRecord(t, os.Getpid(), "11111111-1111-4111-8111-111111111111", "alpha", "/tmp", ""),
	)
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	tests := []struct {
		args []string
		code int
		out  string
	}{
		// --jq implies --json; a string prints raw, a number, an object or
		// an array as compact JSON, one result a line.
		{[]string{"list", "--jq", ".[].name"}, wire.ExitOK, "alpha\n"},
		{[]string{"list", "-q", ".[] | .pid"}, wire.ExitOK, strconv.Itoa(os.Getpid()) + "\n"},
		{[]string{"list", "--json", "--jq", ".[] | {name, cwd}"}, wire.ExitOK, `{"cwd":"/tmp","name":"alpha"}` + "\n"},
		{[]string{"list", "--jq", "[.[].name], null, true"}, wire.ExitOK, "[\"alpha\"]\nnull\ntrue\n"},
		// A string is raw, but what is not printable stays escaped.
		{[]string{"list", "--jq", `"a\u001b[31mb\tc"`}, wire.ExitOK, "a\\x1b[31mb\tc\n"},
		{[]string{"list", "--jq", "empty"}, wire.ExitOK, ""},
		// -o json and --output json, other tools' spelling of --json.
		{[]string{"list", "-o", "json"}, wire.ExitOK, "[\n  {"},
		{[]string{"list", "--output=json", "-q", ".[].name"}, wire.ExitOK, "alpha\n"},
	}
	for _, tt := range tests {
		t.Run(tt.args[len(tt.args)-1], func(t *testing.T) {
			r := evRun(t, env, nil, tt.args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			if strings.HasSuffix(tt.out, "{") {
				assert.True(t, strings.HasPrefix(r.stdout, tt.out), r.stdout)
				return
			}
			assert.Equal(t, tt.out, r.stdout)
		})
	}
}

func TestJQErrors(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir()}
	// A bad expression is a usage error that names it, before anything runs.
	r := evRun(t, env, nil, "list", "--jq", ".[")
	assert.Equal(t, wire.ExitUsage, r.code)
	assert.Contains(t, r.stderr, `peerctl: --jq ".[": `)
	assert.Contains(t, r.stderr, "Run 'peerctl list --help' for usage.")
	assert.Empty(t, r.stdout)
	r = evRun(t, env, nil, "list", "-o", "yaml")
	assert.Equal(t, wire.ExitUsage, r.code)
	assert.Contains(t, r.stderr, `peerctl: --output "yaml": only json is an output format`)
	// An expression that fails on the output of a command that only reads
	// is an error (exit 1) that says so, after the results before it.
	r = evRun(t, env, nil, "list", "--jq", "1, .foo")
	assert.Equal(t, wire.ExitError, r.code)
	assert.Equal(t, "1\n", r.stdout)
	assert.Equal(t, "peerctl: --jq: expected an object but got: array ([])\n", r.stderr)
	// halt_error prints its string raw on stderr (no newline added), any
	// other value as JSON; its code is the exit code, 5 unless given.
	r = evRun(t, env, nil, "list", "--jq", `"bye\n" | halt_error`)
	assert.Equal(t, 5, r.code, r.stderr)
	assert.Equal(t, "bye\n", r.stderr)
	r = evRun(t, env, nil, "list", "--jq", `{a: 1} | halt_error(7)`)
	assert.Equal(t, 7, r.code, r.stderr)
	assert.Equal(t, `{"a":1}`+"\n", r.stderr)
	// NaN and the infinities print as jq 1.7 prints them.
	r = evRun(t, env, nil, "list", "--jq", "nan, infinite")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, "null\n1.7976931348623157e+308\n", r.stdout)
	// env and $ENV are the environment.
	t.Setenv("PEERCTL_JQ_TEST", "seen")
	r = evRun(t, env, nil, "list", "--jq", "env.PEERCTL_JQ_TEST, $ENV.PEERCTL_JQ_TEST")
	assert.Equal(t, "seen\nseen\n", r.stdout, r.stderr)
	// As gh, the filter is not run on a refusal: stdout stays empty, the
	// refusal is on stderr and in the exit code.
	for _, args := range [][]string{
		{"show", "--jq", ".name", "no-such-session"},
		{"show", "--jq", ".[0]", "no-such-session"},
		{"send", "--jq", ".ok", "no-such-session", "hi"},
	} {
		r = evRun(t, env, nil, args...)
		assert.Equal(t, wire.ExitCode(domain.ReasonNotLive), r.code, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stdout, "%v", args)
		assert.Contains(t, r.stderr, "peerctl: not_live: ", "%v", args)
		assert.NotContains(t, r.stderr, "--jq", "%v", args)
	}
}

// TestJQNeverHidesASend: a filter that fails on the receipt of a send that
// was delivered leaves the send's exit code (0), and stderr says the send
// stands: a script that retries on failure must not send twice.
func TestJQNeverHidesASend(t *testing.T) {
	sock := evSocketDir(t)
	rec := evLiveRecord(t, testproc.Sleeper(t), "55555555-5555-4555-8555-555555555555", "delta", t.TempDir(), sock+"/5.sock")
	listenAll(t, rec)
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, rec), "PEERCTL_CLAUDE": testbin.Build(t, testbin.FakeClaude)}
	r := evRun(t, env, nil, "send", "--transport", "socket", "--no-confirm", "delta", "hi", "--jq", ".msgid | ascii_downcase")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "peerctl: --jq: ascii_downcase cannot be applied to: null\n")
	assert.Contains(t, r.stderr, "peerctl: --jq: the filter failed on the output only; what peerctl send did stands (exit 0)\n")
}

// An expression that never ends ends with the command's context (Ctrl-C,
// SIGTERM and SIGHUP cancel it).
func TestJQEndsWithTheContext(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	c := newFactory(strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	c.compileJQ = func(expr string) (func(context.Context, any, func(any) error) error, error) {
		filter, err := jqfilter.Compile(expr)
		return func(ctx context.Context, v any, emit func(any) error) error {
			cancel() // the signal comes once the filter runs
			return filter(ctx, v, emit)
		}, err
	}
	code := execute(ctx, c, []string{"list", "--jq", "def f: f; f"})
	assert.Equal(t, wire.ExitError, code)
	assert.Contains(t, errb.String(), "peerctl: --jq: context canceled")
}

// A peerctl without the jq filter (cmd/peerctl) runs a command line with
// --jq as peerctl-mcp, before the command runs: with none there, the
// error says so and how to get one, and nothing was read, sent or
// printed. -o json needs no filter and runs here.
func TestJQNeedsPeerctlMCP(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executables here are files with mode bits")
	}
	t.Setenv("PATH", t.TempDir())
	dir := t.TempDir()
	env := map[string]string{"HOME": dir, "CLAUDE_CONFIG_DIR": evConfigDir(t), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
	alone := func(in io.Reader) func(*factory) {
		return func(c *factory) {
			c.compileJQ = nil
			c.io.in = in
			c.executable = func() (string, error) { return filepath.Join(dir, "peerctl"), nil }
		}
	}
	for _, args := range [][]string{
		{"list", "--jq", ".[].name"},
		{"list", "-q", ".["}, // peerctl-mcp says what is wrong with it
		{"send", "--jq", ".receipt", "x", "-"},
		{"doctor", "--json", "-q", ".problems"},
	} {
		const text = "the text, left for peerctl-mcp"
		in := strings.NewReader(text)
		r := evRun(t, env, alone(in), args...)
		assert.Equal(t, wire.ExitError, r.code, "%q: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "peerctl: --jq runs peerctl-mcp "+mcpLinked, "%q", args)
		assert.Contains(t, r.stderr, "make build (bin/peerctl and bin/peerctl-mcp)", "%q", args)
		assert.Empty(t, r.stdout, "%q", args)
		assert.Equal(t, len(text), in.Len(), "%q read stdin", args)
	}
	r := evRun(t, env, alone(nil), "list", "-o", "json")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, "[]\n", r.stdout)
}

// A watch goes on past an event the filter fails on (as jq over a stream
// of inputs): the error is said for that event, the next one is filtered,
// and the exit code at the end is 1.
func TestJQGoesOnPastAFailedEvent(t *testing.T) {
	var out, errb bytes.Buffer
	s := newIOStreams(nil, &out, &errb, func(string) string { return "" })
	filter, err := jqfilter.Compile(`if .event == "status" then error("boom") else .event end`)
	require.NoError(t, err)
	s.jq = func(v any, emit func(any) error) error { return filter(context.Background(), v, emit) }
	for _, ev := range []string{"appeared", "status", "died"} {
		require.NoError(t, s.writeJSONLine(map[string]string{"event": ev}))
	}
	assert.Equal(t, "appeared\ndied\n", out.String())
	assert.Equal(t, "peerctl: --jq: error: boom\n", errb.String())
	assert.Equal(t, wire.ExitError, s.jqExit(&cobra.Command{Use: "watch"}, wire.ExitOK))

	// halt_error ends it, as jq ends, with its code.
	filter, err = jqfilter.Compile(`if .event == "died" then "bye\n" | halt_error(4) else .event end`)
	require.NoError(t, err)
	out.Reset()
	errb.Reset()
	var se silentError
	require.ErrorAs(t, s.writeJSONLine(map[string]string{"event": "died"}), &se)
	assert.Equal(t, 4, se.code)
	assert.Equal(t, "bye\n", errb.String())
	assert.Equal(t, 4, s.jqExit(&cobra.Command{Use: "watch"}, 4))
	assert.Empty(t, errb.String()[len("bye\n"):], "no note: the command only reads")
}
