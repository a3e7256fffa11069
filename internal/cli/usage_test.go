package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"unicode/utf8"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// TestUsageErrors: every usage error exits 2, says what is wrong once
// (no "peerctl: peerctl"), in plain grammar, and points to the help of
// the command that failed.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		msg  string
		help string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "peerctl"`, "peerctl"},
		{[]string{"lsit"}, `unknown command "lsit" for "peerctl"; did you mean list?`, "peerctl"},
		{[]string{"frobnicate", "--help"}, `unknown command "frobnicate" for "peerctl"`, "peerctl"},
		{[]string{"lsit", "-h"}, `unknown command "lsit" for "peerctl"; did you mean list?`, "peerctl"},
		{[]string{"endpoint", "pars", "--help"}, `unknown command "pars" for "peerctl endpoint"; did you mean parse?`, "peerctl endpoint"},
		{[]string{"endpoint", "bogus"}, `unknown command "bogus" for "peerctl endpoint"`, "peerctl endpoint"},
		{[]string{"endpoint", "pars"}, `unknown command "pars" for "peerctl endpoint"; did you mean parse?`, "peerctl endpoint"},
		{[]string{"outbox", "lsit"}, `unknown command "lsit" for "peerctl outbox"; did you mean list?`, "peerctl outbox"},
		{[]string{"outbox", "shwo", "1"}, `unknown command "shwo" for "peerctl outbox"; did you mean show?`, "peerctl outbox"},
		{[]string{"hosts", "chek"}, `unknown command "chek" for "peerctl hosts"; did you mean check?`, "peerctl hosts"},
		{[]string{"help", "nosuch"}, `unknown help topic "nosuch"; peerctl --help lists the commands and topics`, "peerctl help"},
		{[]string{"help", "outbox", "zzzzzz"}, `unknown help topic "outbox zzzzzz"; peerctl outbox --help lists the commands and topics`, "peerctl help"},
		{[]string{"help", "lsit"}, `unknown help topic "lsit"; did you mean list?`, "peerctl help"},
		{[]string{"help", "env"}, `unknown help topic "env"; did you mean environment?`, "peerctl help"},
		{[]string{"lsit", "--json"}, `unknown command "lsit" for "peerctl"; did you mean list?`, "peerctl"},
		{[]string{"lsit", "-q", "."}, `unknown command "lsit" for "peerctl"; did you mean list?`, "peerctl"},
		{[]string{"serve", "stauts", "--json"}, `unknown command "stauts" for "peerctl serve"; did you mean status?`, "peerctl serve"},
		{[]string{"policy", "lst", "--json"}, `unknown command "lst" for "peerctl policy"; did you mean list?`, "peerctl policy"},
		{[]string{"--config-dir", "/x", "lsit", "--json"}, `unknown command "lsit" for "peerctl"; did you mean list?`, "peerctl"},
		{[]string{"--nosuch", "lsit"}, `unknown flag: --nosuch`, "peerctl"},
		{[]string{"outbox", "help"}, `unknown command "help" for "peerctl outbox"; did you mean peerctl help outbox?`, "peerctl outbox"},
		{[]string{"exit-codes", "extra"}, `exit-codes takes no arguments, got ["extra"]`, "peerctl exit-codes"},
		{[]string{"--", "list"}, `unknown command "list" for "peerctl": a word after "--" is no command (peerctl list runs it)`, "peerctl"},
		{[]string{"--config-dir", "list"}, `--config-dir took "list" as its value, and no command followed (peerctl --config-dir DIR list)`, "peerctl"},
		{[]string{"--config-dir", "/x"}, `no command given (peerctl --help lists them)`, "peerctl"},
		{[]string{"--debug"}, `no command given (peerctl --help lists them)`, "peerctl"},
		{[]string{"help", "policy", "nats-stup"}, `unknown help topic "policy nats-stup"; did you mean policy nats-setup?`, "peerctl help"},
		{[]string{"help", "exit-code"}, `unknown help topic "exit-code"; did you mean exit-codes?`, "peerctl help"},
		{[]string{"help", "outbox", "lsit"}, `unknown help topic "outbox lsit"; did you mean outbox list?`, "peerctl help"},
		{[]string{"help", "endpoint", "parse", "x"}, `unknown help topic "endpoint parse x"; peerctl --help lists the commands and topics`, "peerctl help"},
		{[]string{"show"}, "show needs 1 argument, got 0", "peerctl show"},
		{[]string{"show", "a", "b"}, "show needs 1 argument, got 2", "peerctl show"},
		{[]string{"endpoint", "parse"}, "endpoint parse needs 1 argument, got 0", "peerctl endpoint parse"},
		{[]string{"endpoint", "format", "1"}, "endpoint format needs 3 arguments, got 1", "peerctl endpoint format"},
		{[]string{"list", "x"}, `list takes no arguments, got ["x"]`, "peerctl list"},
		{[]string{"send"}, "send needs SESSION and TEXT (or - for stdin), got 0 arguments", "peerctl send"},
		{[]string{"send", "a", "b", "c"}, "send needs SESSION and TEXT (or - for stdin), got 3 arguments", "peerctl send"},
		{[]string{"send", "--wait", "5m", "b", "c"}, `--wait 5m: --wait takes its duration joined by '=' (--wait=5m); written apart, "5m" would be read as SESSION or TEXT`, "peerctl send"},
		{[]string{"send", "b", "--wait", "5m"}, `--wait 5m: --wait takes its duration joined by '=' (--wait=5m)`, "peerctl send"},
		{[]string{"send", "--durable", "8h", "x", "hi"}, `--durable 8h: --durable takes its duration joined by '=' (--durable=8h); written apart, "8h" would be read as SESSION or TEXT`, "peerctl send"},
		{[]string{"send", "--wait=5m", "b", "c", "d"}, "send needs SESSION and TEXT (or - for stdin), got 3 arguments", "peerctl send"},
		{[]string{"send", "--await-reply=0s", "b", "c"}, "--await-reply 0s: want a positive duration such as 2m", "peerctl send"},
		{[]string{"send", "--wait=0s", "b", "c"}, "--wait 0s: want a positive duration such as 2m", "peerctl send"},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus", "peerctl list"},
		{[]string{"serve", "--http", "8080"}, `--http 8080: --http takes its ADDR joined by '=' (--http=:8080; ADDR is HOST:PORT); written apart, "8080" would be read as a command`, "peerctl serve"},
		{[]string{"serve", "--http", "127.0.0.1:8080"}, `--http 127.0.0.1:8080: --http takes its ADDR joined by '=' (--http=127.0.0.1:8080; ADDR is HOST:PORT)`, "peerctl serve"},
		{[]string{"serve", "--idle-exit=0", "--http", ":8080"}, `--http :8080: --http takes its ADDR joined by '='`, "peerctl serve"},
		{[]string{"send", "--from", "ci", "--transport", "socket", "x", "hi"}, "--from and --transport socket: the socket transport carries no sender's name", "peerctl send"},
		{[]string{"send", "--key", "k1", "--dry-run", "x", "hi"}, "--key and --dry-run: a dry run stores nothing", "peerctl send"},
		{[]string{"send", "--durable", "--dry-run", "x", "hi"}, "--durable and --dry-run: a dry run stores nothing", "peerctl send"},
		{[]string{"send", "--transport", "carrier-pigeon", "x", "hi"}, `--transport "carrier-pigeon"`, "peerctl send"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, tt.args...)
			assert.Equal(t, wire.ExitUsage, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Empty(t, r.stdout, "no help on stdout for a usage error")
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			require.Len(t, lines, 2, r.stderr)
			assert.True(t, strings.HasPrefix(lines[0], "peerctl: "+tt.msg), "got %q", lines[0])
			assert.NotContains(t, r.stderr, "peerctl: peerctl")
			assert.NotContains(t, r.stderr, "(s)")
			assert.Equal(t, "Run '"+tt.help+" --help' for usage.", lines[1])
		})
	}
}

// A duration joined to --wait, or a bare --wait followed by something that
// is not a duration, is fine; "--" ends the flags. (A bare --wait followed
// by a duration is a usage error: TestUsageErrors.)
func TestWaitDurationWrittenApartOnlyWhenItIs(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t)}
	for _, args := range [][]string{
		{"send", "--transport", "socket", "--wait=10m", "5m", "hello"},
		{"send", "--transport", "socket", "--wait=5m", "5m", "hello"},
		{"send", "--transport", "socket", "--wait", "proj-89", "hello"},
		{"send", "--transport", "socket", "5m", "hello"},
		{"send", "--transport", "socket", "--wait", "--", "5m", "hello"},
	} {
		r := evRun(t, env, nil, args...)
		assert.Equal(t, wire.ExitNotLive, r.code, "%v: %s", args, r.stderr)
		assert.NotContains(t, r.stderr, "joined by", args)
	}
}

// A session announcing a peer protocol the socket transport does not know:
// show says so beside "addressable", and the socket send refuses it.
func TestShowSaysSocketRefusesNewerPeerProtocol(t *testing.T) {
	pid := testproc.Sleeper(t)
	sock := filepath.Join(evSocketDir(t), "p.sock")
	socktest.Listen(t, sock, false)
	for _, tc := range []struct {
		proto int
		note  bool
	}{{1, false}, {2, true}} {
		rec := evLiveRecord(t, pid, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89", "/src/p", sock)
		rec.PeerProtocol = tc.proto
		env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, rec)}
		r := evRun(t, env, nil, "show", "proj-89")
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		assert.Regexp(t, fmt.Sprintf(`(?m)^peerProtocol:\s+%d$`, tc.proto), r.stdout)
		d := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", "proj-89", "hi")
		stale := rec
		stale.PID = testproc.DeadPID(t)
		sr := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, stale)}, nil, "show", "proj-89")
		require.Equal(t, wire.ExitOK, sr.code, sr.stderr)
		assert.NotContains(t, sr.stdout, "harness_unsupported", "a stale record is refused as not_live first")
		if tc.note {
			assert.Contains(t, r.stdout, "send --transport socket refuses it (harness_unsupported)")
			assert.Equal(t, wire.ExitHarnessUnsupported, d.code, d.stderr)
		} else {
			assert.NotContains(t, r.stdout, "harness_unsupported")
			assert.Equal(t, wire.ExitOK, d.code, d.stderr)
		}
	}
}

// TestCommandGroupsWithoutSubcommandPrintHelp: a bare group still prints
// its help and exits 0.
func TestCommandGroupsWithoutSubcommandPrintHelp(t *testing.T) {
	r := evRun(t, nil, nil, "endpoint")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "peerctl endpoint [command]")
}

// helpBound is the most lines a command's --help may take: a screen.
const helpBound = 50

// topicBound is the most lines a help topic (exit-codes, environment)
// may take: its table teaches in a screen with room to spare; each row in
// full is in man peerctl and docs/.
const topicBound = 44

// screenOf is the most lines cmd's help may take (helpBound, topicBound).
func screenOf(cmd *cobra.Command) int {
	if cmd.Runnable() || cmd.HasSubCommands() {
		return helpBound
	}
	return topicBound
}

// TestHelpFitsAScreen walks the whole command tree: every --help fits its
// bound, at the widest it wraps to and on a terminal of 80 columns (where
// root, send, serve and policy ran to 52-81 lines: each line of a
// paragraph broken in two, the global flags described again under every
// command), leads with one line of what the command does (and where the
// rest is), gives 3 to 6 examples, and prints no exit-code table (that is
// "peerctl help exit-codes", alone).
func TestHelpFitsAScreen(t *testing.T) {
	root := newRootCmd(newFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" }))
	var walk func(*cobra.Command)
	seen := 0
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if cmd.Hidden {
			return
		}
		seen++
		path := cmd.CommandPath()
		t.Run(path, func(t *testing.T) {
			args := append(strings.Fields(path)[1:], "--help")
			narrow := evRun(t, map[string]string{"COLUMNS": "80"}, nil, args...)
			require.Equal(t, wire.ExitOK, narrow.code, narrow.stderr)
			lines := strings.Split(strings.TrimSuffix(narrow.stdout, "\n"), "\n")
			assert.LessOrEqual(t, len(lines), screenOf(cmd), "%s --help at 80 columns:\n%s", path, narrow.stdout)
			for _, l := range lines { // examples and usage lines too: a wider one wraps (a long one is continued with a trailing \)
				if strings.Contains(l, " ") { // an address alone cannot be broken
					assert.LessOrEqual(t, shownWidth(l), 80, "%s --help: a line wider than 80 columns: %q", path, l)
				}
			}
			r := evRun(t, nil, nil, args...)
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			assert.LessOrEqual(t, len(lines), helpBound, "%s --help:\n%s", path, r.stdout)
			for _, l := range strings.Split(r.stdout, "\n") {
				if !strings.HasPrefix(l, "  ") { // an example may be a long command line
					assert.LessOrEqual(t, utf8.RuneCountInString(l), helpWidth, "%s --help: a line wider than the screen: %q", path, l)
				}
			}
			_, flags, _ := strings.Cut(r.stdout, "\nFlags:\n")
			for _, l := range strings.Split(flags, "\n") {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), helpWidth, "%s --help: a flag line wider than the screen: %q", path, l)
			}
			if cmd.Name() == "exit-codes" {
				assert.Contains(t, r.stdout, exitCodesHelp(helpWidth))
				return
			}
			if cmd.Name() == "environment" { // a help topic, as exit-codes
				assert.Contains(t, r.stdout, EnvironmentHelp(helpWidth))
				return
			}
			assert.NotContains(t, r.stdout, "Exit codes:", "the exit-code table is printed by peerctl help exit-codes alone")
			if cmd.Runnable() && cmd.Name() != "help" {
				_, ex, ok := strings.Cut(r.stdout, "\nExamples:\n")
				require.True(t, ok, "%s --help has examples", path)
				ex, _, _ = strings.Cut(ex, "\n\n")
				n := len(strings.Split(strings.ReplaceAll(ex, "\\\n", ""), "\n")) // a line continued with \ is one example
				assert.True(t, n >= 3 && n <= 6, "%s --help has %d examples, want 3 to 6:\n%s", path, n, ex)
			}
			if cmd.HasParent() && cmd.Name() != "help" {
				assert.Regexp(t, `^[^\n]+(\n[^\n]+)*\.\nIn full: https://github\.com/peerctl/peerctl/blob/main/docs/COMMANDS\.md#peerctl-[a-z-]+\nIts exit codes: peerctl help exit-codes\n\n`, r.stdout)
			}
		})
	}
	walk(root)
	assert.GreaterOrEqual(t, seen, 15, "the walk reached every command")
}

// TestHelpPointsToDocsThatExist: each "In full: <repository>/docs/COMMANDS.md#peerctl-X"
// names a section docs/COMMANDS.md has.
func TestHelpPointsToDocsThatExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "COMMANDS.md"))
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ReplaceAll(h, " ", "-")] = true
		}
	}
	root := newRootCmd(newFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" }))
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if _, anchor, ok := strings.Cut(cmd.Long, "docs/COMMANDS.md#"); ok {
			anchor, _, _ = strings.Cut(anchor, "\n")
			assert.True(t, anchors[anchor], "%s points to docs/COMMANDS.md#%s, which has no such section", cmd.CommandPath(), anchor)
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestExitCodesTopic: "peerctl help exit-codes" prints the one table.
func TestExitCodesTopic(t *testing.T) {
	r := evRun(t, nil, nil, "help", "exit-codes")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, exitCodesHelp(helpWidth))
	row := func(code, next string) string {
		return strings.Join(strings.Fields(r.stdout[strings.Index(r.stdout, code):strings.Index(r.stdout, next)]), " ")
	}
	assert.Contains(t, row("   9 ", "  10 "), "Ctrl-C ended the wait", "an interrupted --await-reply exits 9, and the table says so")
	assert.Contains(t, row("  11 ", "  12 "), "(Ctrl-C: exit 0)", "and that an interrupted --wait does not")
	root := evRun(t, nil, nil, "--help")
	assert.Contains(t, root.stdout, "\n  peerctl help environment  The environment variables", "the root help lists the topics as they are asked for, in one column")
	assert.Contains(t, root.stdout, "\n  peerctl help exit-codes   Every exit code", "the root help lists the topics as they are asked for, in one column")
	assert.Contains(t, root.stdout, "(default $QWEN_HOME, else ~/.qwen)", "every home flag says its default in one form")
}

// TestHelpTopicsTablesOnlyForTheirHelp: building the command tree (every
// start, `list` included) makes neither help topic's table; each topic's
// help, asked either way, prints its table whole.
func TestHelpTopicsTablesOnlyForTheirHelp(t *testing.T) {
	root := newRootCmd(newFactory(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, func(string) string { return "" }))
	tables := map[string]string{"exit-codes": exitCodesHelp(helpWidth), "environment": EnvironmentHelp(helpWidth)}
	for name, table := range tables {
		topic, _, err := root.Find([]string{name})
		require.NoError(t, err)
		require.Equal(t, name, topic.Name())
		assert.False(t, strings.Contains(topic.Long, table), "the %s table is made only for its help", name)
		for _, args := range [][]string{{"help", name}, {name, "--help"}, {name}} {
			r := evRun(t, nil, nil, args...)
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			assert.Contains(t, r.stdout, table, "peerctl %s", strings.Join(args, " "))
			assert.Contains(t, r.stdout, "\n\n"+strings.SplitN(table, "\n", 2)[0], "peerctl %s: the intro, a blank line, then the table", strings.Join(args, " "))
		}
	}
}

// TestSharedNameCLI: with two live sessions named "twin", send refuses the
// name with both candidates and reaches each by its full id or endpoint
// (the courier addresses the socket), and show warns of the shared name.
func TestSharedNameCLI(t *testing.T) {
	sock := evSocketDir(t)
	p1, p2 := testproc.Sleeper(t), testproc.Sleeper(t)
	id1, id2 := "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	r1 := evLiveRecord(t, p1, id1, "twin", t.TempDir(), sock+"/1.sock")
	r2 := evLiveRecord(t, p2, id2, "twin", t.TempDir(), sock+"/2.sock")
	cfg := evConfigDir(t, r1, r2)
	listenAll(t, r1, r2) // a dry run checks the socket is there, as the send does
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "PEERCTL_CLAUDE": "/nonexistent/claude"}
	ep2 := fmt.Sprintf("cc-peer:v1:%d:twin:%s", p2, sock+"/2.sock")

	r := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", "twin", "hi")
	assert.Equal(t, wire.ExitIdentityMismatch, r.code, "send twin: %s", r.stderr)
	assert.Contains(t, r.stderr, "use the full session id or endpoint of the one you mean")
	assert.Equal(t, 2, strings.Count(r.stderr, "  candidate: "), "send twin lists both candidates")
	// Each candidate on a short line: its id as list shows it, name,
	// harness (what tells a Claude Code "twin" from a Codex one) and pid.
	assert.Contains(t, r.stderr, fmt.Sprintf("  candidate: 11111111  \"twin\"  claude-code  pid %d\n", p1))
	assert.Contains(t, r.stderr, fmt.Sprintf("  candidate: 22222222  \"twin\"  claude-code  pid %d", p2))
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "  candidate: ") {
			assert.LessOrEqual(t, len(line), 60, line)
		}
	}
	for _, addr := range []string{id1, id2, ep2} {
		r := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", addr, "hi")
		assert.Equal(t, wire.ExitOK, r.code, "send %s: %s", addr, r.stderr)
	}

	for _, addr := range []string{id2, ep2, "22222222"} {
		r := evRun(t, env, nil, "show", addr)
		require.Equal(t, wire.ExitOK, r.code, "show %s: %s", addr, r.stderr)
		assert.Contains(t, r.stdout, id2)
		assert.Regexp(t, `(?m)^warning:\s+name "twin" is carried by 2 live sessions`, r.stdout)

		r = evRun(t, env, nil, "show", "--json", addr)
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		var j wire.Show
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
		assert.Equal(t, p2, j.PID)
		require.Len(t, j.Warnings, 1)
		assert.Contains(t, j.Warnings[0], `name "twin" is carried by 2 live sessions`)
	}

	r = evRun(t, env, nil, "show", "twin")
	assert.Equal(t, wire.ExitIdentityMismatch, r.code, r.stderr)
	assert.Contains(t, r.stderr, "show one by its full session id or endpoint")
	assert.Equal(t, 2, strings.Count(r.stderr, "  candidate: "))
}

// TestDryRunWarnsOfTheRealSendsFailure: a courier program that cannot be
// found fails the real send; the dry run, which sends nothing, still says
// what would run (exit 0) and warns on stderr of the real send's failure.
func TestDryRunWarnsOfTheRealSendsFailure(t *testing.T) {
	sock := evSocketDir(t)
	pid := testproc.Sleeper(t)
	cfg := evConfigDir(t, evLiveRecord(t, pid, "33333333-3333-4333-8333-333333333333", "solo", t.TempDir(), sock+"/3.sock"))
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg}
	missing := "/nonexistent/claude"
	real := evRun(t, env, nil, "send", "--claude", missing, "solo", "hi")
	dry := evRun(t, env, nil, "send", "--dry-run", "--claude", missing, "solo", "hi")
	require.Equal(t, wire.ExitDeliveryFailed, real.code, real.stderr)
	assert.Equal(t, wire.ExitOK, dry.code, "dry run: %s%s", dry.stdout, dry.stderr)
	assert.Contains(t, dry.stdout, "would deliver")
	assert.Contains(t, dry.stdout, "run:   "+missing+" ")
	assert.Contains(t, dry.stderr, "warning: the courier program \""+missing+"\" was not found")
	assert.Contains(t, dry.stderr, "a real send would fail with delivery_failed")
}

// TestListHelpSaysRecordsNotFiles: list --all shows records; the *.key
// files beside them are never shown or opened.
func TestListHelpSaysRecordsNotFiles(t *testing.T) {
	r := evRun(t, nil, nil, "list", "--help")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	text := strings.Join(strings.Fields(r.stdout), " ") // flag texts wrap
	assert.Contains(t, text, "with --all every record")
	assert.Contains(t, text, "show every record (each *.json file)")
	assert.Contains(t, text, "*.key files beside them are never shown or opened")
	assert.NotContains(t, text, "every file")
}

// Help says what a person cannot guess: --wait's duration needs "=", a
// shared name is reached by full id (docs/COMMANDS.md has the rest).
func TestHelpStatesTheSharpEdges(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"send", "--help"}, []string{"--wait=5m, not --wait 5m"}},
		// cobra's bash script calls bash-completion's functions (gh says so too).
		{[]string{"completion", "--help"}, []string{"bash needs the bash-completion package"}},
		// A shared name refuses only as an address: the session is still
		// reached by its full id or endpoint (TestSharedNameCLI).
		{[]string{"help", "exit-codes"}, []string{"identity_mismatch    ambiguous address (a name several sessions share: use the full id or endpoint)"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, tt.args...)
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			text := strings.Join(strings.Fields(r.stdout), " ") // flag texts wrap
			for _, w := range tt.want {
				assert.Contains(t, text, strings.Join(strings.Fields(w), " "))
			}
		})
	}
}

// TestMistypedNameSuggests: `send delat hi` refuses not_live (nothing is
// sent, nothing picked) and says which live name was meant; --json carries
// the names.
func TestMistypedNameSuggests(t *testing.T) {
	sock := evSocketDir(t)
	rec := evLiveRecord(t, testproc.Sleeper(t), "44444444-4444-4444-8444-444444444444", "delta", t.TempDir(), sock+"/4.sock")
	listenAll(t, rec)
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, rec)}
	r := evRun(t, env, nil, "send", "--transport", "socket", "delat", "hi")
	assert.Equal(t, wire.ExitNotLive, r.code, r.stderr)
	assert.Equal(t, "peerctl: not_live: no live session matches \"delat\"; did you mean \"delta\"?\n", r.stderr)
	r = evRun(t, env, nil, "send", "--json", "--transport", "socket", "delat", "hi")
	var j wire.RefusalDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &j), r.stdout)
	assert.Equal(t, []string{"delta"}, j.Refusal.Suggestions)
}

// A mistyped flag is a usage error that names the flags most likely meant,
// as a mistyped command does.
func TestUnknownFlagSuggests(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"list", "--al"}, "peerctl: unknown flag: --al; did you mean --all?\n"},
		{[]string{"list", "--jsn"}, "peerctl: unknown flag: --jsn; did you mean --json?\n"},
		{[]string{"send", "--wai=1m", "x", "y"}, "peerctl: unknown flag: --wai; did you mean --wait?\n"},
		{[]string{"list", "--config-dri", "x"}, "peerctl: unknown flag: --config-dri; did you mean --config-dir?\n"}, // inherited
		{[]string{"list", "--zzzzzz"}, "peerctl: unknown flag: --zzzzzz\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, tt.args...)
			assert.Equal(t, wire.ExitUsage, r.code)
			assert.True(t, strings.HasPrefix(r.stderr, tt.want), "stderr: %q", r.stderr)
		})
	}
}

// --help wraps flag descriptions to $COLUMNS when it is set, within
// minHelpWidth..helpWidth.
func TestHelpHonoursColumns(t *testing.T) {
	for _, tt := range []struct {
		columns string
		width   int
	}{{"80", 80}, {"500", helpWidth}, {"20", minHelpWidth}, {"", helpWidth}, {"wide", helpWidth}} {
		t.Run("COLUMNS="+tt.columns, func(t *testing.T) {
			assert.Equal(t, tt.width, helpWidthOf(tt.columns))
			for _, args := range [][]string{{"send", "--help"}, {"list", "--help"}, {"hosts", "add", "--help"}} {
				r := evRun(t, map[string]string{"COLUMNS": tt.columns}, nil, args...)
				require.Equal(t, wire.ExitOK, r.code, r.stderr)
				_, flags, ok := strings.Cut(r.stdout, "\nFlags:\n")
				require.True(t, ok)
				longest := 0
				for _, l := range strings.Split(flags, "\n") {
					longest = max(longest, utf8.RuneCountInString(l))
				}
				assert.LessOrEqual(t, longest, tt.width, "%v", args)
				if tt.width == 80 {
					assert.Greater(t, longest, 70, "%v: wrapped to the width, not far under it", args)
				}
			}
		})
	}
}

// send --help's first line names every harness (it named two of three).
func TestSendHelpNamesEveryHarness(t *testing.T) {
	r := evRun(t, nil, nil, "send", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	first, _, _ := strings.Cut(r.stdout, "\n")
	for _, h := range domain.Harnesses() {
		assert.Contains(t, first, h.Title())
	}
}

// doctor --help and endpoint --help name every harness: they were typed by
// hand and left out the ones added later.
func TestHelpNamesEveryHarness(t *testing.T) {
	doctor := evRun(t, nil, nil, "doctor", "--help")
	require.Equal(t, 0, doctor.code, doctor.stderr)
	first, _, _ := strings.Cut(doctor.stdout, "\n")
	root := evRun(t, nil, nil, "--help")
	require.Equal(t, 0, root.code, root.stderr)
	endpoint := evRun(t, nil, nil, "endpoint", "--help")
	require.Equal(t, 0, endpoint.code, endpoint.stderr)
	format := evRun(t, nil, nil, "endpoint", "format", "--help")
	require.Equal(t, 0, format.code, format.stderr)
	for _, h := range domain.Harnesses() {
		assert.Contains(t, first, h.Title(), "doctor --help")
		assert.Contains(t, endpoint.stdout, h.EndpointPrefix()+"<pid>:", "endpoint --help")
		assert.Contains(t, format.stdout, `"`+h.String()+`"`, "endpoint format --help: --harness choices")
	}
	for _, l := range strings.Split(root.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "endpoint" {
			for _, h := range domain.Harnesses() {
				assert.Contains(t, l, strings.TrimSuffix(h.EndpointPrefix(), "v1:"), "the endpoint command's line in peerctl --help")
			}
		}
	}
}

// endpoint format --harness builds each harness's form, which endpoint
// parse reads back; the harness's rule for the pinned value holds.
func TestEndpointFormatHarness(t *testing.T) {
	tests := []struct {
		harness, key, socket, want string
	}{
		{"", "build:main", "/tmp/cc.sock", "cc-peer:v1:42:build%3Amain:/tmp/cc.sock"},
		{"claude-code", "proj", "/tmp/cc.sock", "cc-peer:v1:42:proj:/tmp/cc.sock"},
		{"qwen-code", "sess-1", "/tmp/q.sock", "qwen-peer:v1:42:sess-1:/tmp/q.sock"},
		{"codex", "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b", "queue", "codex-peer:v1:42:0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b:queue"},
		{"opencode", "ses_0123456789abcdefghijABCDEF", "127.0.0.1:4096", "opencode-peer:v1:42:ses_0123456789abcdefghijABCDEF:127.0.0.1%3A4096"},
	}
	for _, tt := range tests {
		t.Run(cmp.Or(tt.harness, "default"), func(t *testing.T) {
			args := []string{"endpoint", "format", "42", tt.key, tt.socket}
			if tt.harness != "" {
				args = append(args, "--harness", tt.harness)
			}
			r := evRun(t, nil, nil, args...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, tt.want+"\n", r.stdout)

			p := evRun(t, nil, nil, "endpoint", "parse", "--json", tt.want)
			require.Equal(t, 0, p.code, p.stderr)
			var j struct{ Harness, Name, Socket string }
			require.NoError(t, json.Unmarshal([]byte(p.stdout), &j))
			assert.Equal(t, cmp.Or(tt.harness, "claude-code"), j.Harness)
			assert.Equal(t, tt.key, j.Name)
			assert.Equal(t, tt.socket, j.Socket)
		})
	}
	for _, bad := range [][]string{
		{"--harness", "codex", "42", "not-a-uuid", "/tmp/s"},
		{"--harness", "opencode", "42", "ses_short", "127.0.0.1:1"},
		{"--harness", "vim", "42", "x", "/tmp/s"},
	} {
		r := evRun(t, nil, nil, append([]string{"endpoint", "format"}, bad...)...)
		assert.Equal(t, wire.ExitUsage, r.code, "%v: %s", bad, r.stdout)
		assert.Empty(t, r.stdout, "%v", bad)
	}
}

// An empty --harness is a usage error, as other empty flags are: written
// from an unset shell variable, it would silently mean every harness (list)
// or Claude Code's form (endpoint format).
func TestEmptyHarnessIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"list", "--harness="}, {"endpoint", "format", "--harness", "", "1", "a", "/tmp/s.sock"}} {
		r := evRun(t, nil, nil, args...)
		assert.Equal(t, wire.ExitUsage, r.code, "%q: %s", args, r.stderr)
		assert.Contains(t, r.stderr, `--harness: unknown harness ""`, "%q", args)
	}
}

// A duration flag's value alone ([=10m] in --help) is written without its
// zero minutes and seconds.
func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", 24 * time.Hour: "24h", 30 * time.Second: "30s",
		90 * time.Minute: "1h30m", 5*time.Minute + 30*time.Second: "5m30s", 20 * time.Second: "20s"} {
		assert.Equal(t, want, shortDuration(d), d.String())
	}
}

// No TEXT and an empty stdin that is not a terminal (cron, </dev/null)
// says so, not just that the message is empty; the exit stays
// invalid_message's, as for any empty text.
func TestSendWithoutTextOnEmptyStdinSaysSo(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t)}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"send", "proj-89"}, "no TEXT was given and stdin was empty"},
		{[]string{"send", "proj-89", "-"}, "invalid_message: stdin was empty"},
	} {
		r := evRun(t, env, nil, tc.args...)
		assert.Equal(t, wire.ExitCode(domain.ReasonInvalidMessage), r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.msg, tc.args)
	}
}
