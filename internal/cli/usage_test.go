package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
		{[]string{"endpoint", "bogus"}, `unknown command "bogus" for "peerctl endpoint"`, "peerctl endpoint"},
		{[]string{"endpoint", "pars"}, `unknown command "pars" for "peerctl endpoint"; did you mean parse?`, "peerctl endpoint"},
		{[]string{"show"}, "show needs 1 argument, got 0", "peerctl show"},
		{[]string{"show", "a", "b"}, "show needs 1 argument, got 2", "peerctl show"},
		{[]string{"endpoint", "parse"}, "endpoint parse needs 1 argument, got 0", "peerctl endpoint parse"},
		{[]string{"endpoint", "format", "1"}, "endpoint format needs 3 arguments, got 1", "peerctl endpoint format"},
		{[]string{"list", "x"}, `list takes no arguments, got ["x"]`, "peerctl list"},
		{[]string{"send"}, "send needs SESSION and TEXT (or - for stdin), got 0 arguments", "peerctl send"},
		{[]string{"send", "a", "b", "c"}, "send needs SESSION and TEXT (or - for stdin), got 3 arguments", "peerctl send"},
		{[]string{"send", "--wait", "5m", "b", "c"}, `--wait 5m: --wait takes its duration joined by '=' (--wait=5m); written apart, "5m" would be read as SESSION or TEXT`, "peerctl send"},
		{[]string{"send", "b", "--wait", "5m"}, `--wait 5m: --wait takes its duration joined by '=' (--wait=5m)`, "peerctl send"},
		{[]string{"send", "--wait=5m", "b", "c", "d"}, "send needs SESSION and TEXT (or - for stdin), got 3 arguments", "peerctl send"},
		{[]string{"send", "--await-reply=0s", "b", "c"}, "--await-reply 0s: want a positive duration such as 2m", "peerctl send"},
		{[]string{"send", "--wait=0s", "b", "c"}, "--wait 0s: want a positive duration such as 2m", "peerctl send"},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus", "peerctl list"},
		{[]string{"send", "--transport", "carrier-pigeon", "x", "hi"}, `--transport "carrier-pigeon"`, "peerctl send"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, tt.args...)
			assert.Equal(t, exitUsage, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
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
		assert.Equal(t, exitNotLive, r.code, "%v: %s", args, r.stderr)
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
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, fmt.Sprintf(`(?m)^peerProtocol:\s+%d$`, tc.proto), r.stdout)
		d := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", "proj-89", "hi")
		stale := rec
		stale.PID = testproc.DeadPID(t)
		sr := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, stale)}, nil, "show", "proj-89")
		require.Equal(t, exitOK, sr.code, sr.stderr)
		assert.NotContains(t, sr.stdout, "harness_unsupported", "a stale record is refused as not_live first")
		if tc.note {
			assert.Contains(t, r.stdout, "send --transport socket refuses it (harness_unsupported)")
			assert.Equal(t, exitHarnessUnsupported, d.code, d.stderr)
		} else {
			assert.NotContains(t, r.stdout, "harness_unsupported")
			assert.Equal(t, exitOK, d.code, d.stderr)
		}
	}
}

// TestCommandGroupsWithoutSubcommandPrintHelp: a bare group still prints
// its help and exits 0.
func TestCommandGroupsWithoutSubcommandPrintHelp(t *testing.T) {
	r := evRun(t, nil, nil, "endpoint")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "peerctl endpoint [command]")
}

var helpExitRow = regexp.MustCompile(`(?m)^  (\d)  `)

// TestHelpListsOnlyRelevantExitCodes: each command's help lists the exit
// codes it can end with; send (and the root) keep the whole table.
func TestHelpListsOnlyRelevantExitCodes(t *testing.T) {
	all := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	tests := []struct {
		cmd  []string
		want []string
	}{
		{[]string{"whoami"}, []string{"0", "1", "2", "3"}},
		{[]string{"doctor"}, []string{"0", "1", "2"}},
		{[]string{"list"}, []string{"0", "1", "2"}},
		{[]string{"show"}, []string{"0", "1", "2", "3", "4"}},
		{[]string{"endpoint"}, []string{"0", "2"}},
		{[]string{"endpoint", "parse"}, []string{"0", "2"}},
		{[]string{"endpoint", "format"}, []string{"0", "2"}},
		{[]string{"version"}, []string{"0", "2"}},
		{[]string{"send"}, all},
		{[]string{"relay"}, []string{"0", "1", "2", "5"}},
		{nil, all},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.cmd), func(t *testing.T) {
			r := evRun(t, nil, nil, append(tt.cmd, "--help")...)
			require.Equal(t, exitOK, r.code, r.stderr)
			_, table, ok := strings.Cut(r.stdout, "Exit codes:\n")
			require.True(t, ok, "help has an exit-code table:\n%s", r.stdout)
			table, _, _ = strings.Cut(table, "\n\n")
			var codes []string
			for _, m := range helpExitRow.FindAllStringSubmatch(table, -1) {
				codes = append(codes, m[1])
			}
			assert.Equal(t, tt.want, codes, table)
			// Only the root's table speaks of other commands.
			if tt.cmd != nil {
				assert.NotContains(t, table, "doctor found a problem")
				assert.NotContains(t, table, "whoami:")
			}
		})
	}
}

// TestRelayHelpSaysOnceWhatExit5Means: relay's help states exit 5 once,
// as the relay means it (no courier can start at all), not the send
// table's row (a missing socket, --require-confirm) beside a note that
// narrows it.
func TestRelayHelpSaysOnceWhatExit5Means(t *testing.T) {
	r := evRun(t, nil, nil, "relay", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, "5 "), "one statement of exit 5:\n%s", r.stdout)
	assert.Regexp(t, `(?m)^  5  delivery_failed +no courier can start`, r.stdout)
	for _, not := range []string{"--require-confirm", "socket missing", "a Qwen Code receipt said"} {
		assert.NotContains(t, r.stdout, not, "send's meaning of exit 5")
	}
}

func TestEndpointHelpDescribesOutput(t *testing.T) {
	for _, sub := range []string{"parse", "format"} {
		r := evRun(t, nil, nil, "endpoint", sub, "--help")
		require.Equal(t, exitOK, r.code, r.stderr)
		for _, want := range []string{"Output,", "  endpoint  ", "  pid  ", "  name  ", "  socket  ", "--json", `{"endpoint", "pid", "name", "socket"}`} {
			assert.Contains(t, r.stdout, want, "endpoint %s --help", sub)
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
	assert.Equal(t, exitIdentityMismatch, r.code, "send twin: %s", r.stderr)
	assert.Contains(t, r.stderr, "use the full session id or endpoint of the one you mean")
	assert.Equal(t, 2, strings.Count(r.stderr, "  candidate: session "), "send twin lists both candidates")
	for _, addr := range []string{id1, id2, ep2} {
		r := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", addr, "hi")
		assert.Equal(t, exitOK, r.code, "send %s: %s", addr, r.stderr)
	}

	for _, addr := range []string{id2, ep2, "22222222"} {
		r := evRun(t, env, nil, "show", addr)
		require.Equal(t, exitOK, r.code, "show %s: %s", addr, r.stderr)
		assert.Contains(t, r.stdout, id2)
		assert.Regexp(t, `(?m)^warning:\s+name "twin" is carried by 2 live sessions`, r.stdout)

		r = evRun(t, env, nil, "show", "--json", addr)
		require.Equal(t, exitOK, r.code, r.stderr)
		var j showJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
		assert.Equal(t, p2, j.PID)
		require.Len(t, j.Warnings, 1)
		assert.Contains(t, j.Warnings[0], `name "twin" is carried by 2 live sessions`)
	}

	r = evRun(t, env, nil, "show", "twin")
	assert.Equal(t, exitIdentityMismatch, r.code, r.stderr)
	assert.Contains(t, r.stderr, "show one by its full session id or endpoint")
	assert.Equal(t, 2, strings.Count(r.stderr, "  candidate: session "))
}

// TestDryRunFailsLikeTheRealSend: a courier program that cannot be found
// fails a dry run with the real send's refusal, instead of "would deliver".
func TestDryRunFailsLikeTheRealSend(t *testing.T) {
	sock := evSocketDir(t)
	pid := testproc.Sleeper(t)
	cfg := evConfigDir(t, evLiveRecord(t, pid, "33333333-3333-4333-8333-333333333333", "solo", t.TempDir(), sock+"/3.sock"))
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg}
	missing := "/nonexistent/claude"
	real := evRun(t, env, nil, "send", "--claude", missing, "solo", "hi")
	dry := evRun(t, env, nil, "send", "--dry-run", "--claude", missing, "solo", "hi")
	require.Equal(t, exitDeliveryFailed, real.code, real.stderr)
	assert.Equal(t, real.code, dry.code, "dry run: %s%s", dry.stdout, dry.stderr)
	assert.Equal(t, real.stderr, dry.stderr)
	assert.NotContains(t, dry.stdout, "would deliver")
}

// TestListHelpSaysRecordsNotFiles: list --all shows records; the *.key
// files beside them are never shown or opened.
func TestListHelpSaysRecordsNotFiles(t *testing.T) {
	r := evRun(t, nil, nil, "list", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "With --all every record")
	assert.Contains(t, r.stdout, "*.key files beside them are never shown or opened")
	assert.NotContains(t, r.stdout, "every file")
}

// Help says what a person cannot guess: --wait's duration needs "=", watch's
// exit codes, whoami's bounded walk.
func TestHelpStatesTheSharpEdges(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"send", "--help"}, []string{"--wait=5m", "written apart (--wait 5m) is refused"}},
		{[]string{"watch", "--help"}, []string{"head -1", "exit 1 when the registry cannot be read"}},
		{[]string{"whoami", "--help"}, []string{"stopped after 128 parents"}},
		// A shared name refuses only as an address: the session is still
		// reached by its full id or endpoint (TestSharedNameCLI).
		{[]string{"send", "--help"}, []string{"identity_mismatch    ambiguous address (a name several sessions share: use the full id or endpoint)"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := evRun(t, nil, nil, tt.args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			for _, w := range tt.want {
				assert.Contains(t, r.stdout, w)
			}
		})
	}
}
