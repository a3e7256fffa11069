package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// completions parses `__complete` output: one "value\tdescription" per
// line, then ":<directive>".
func completions(t *testing.T, out string) (map[string]string, string) {
	t.Helper()
	got := map[string]string{}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	directive := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(directive, ":"), "last line is the directive: %q", out)
	for _, l := range lines[:len(lines)-1] {
		v, d, _ := strings.Cut(l, "\t")
		got[v] = d
	}
	return got, directive
}

func TestCompletionOffersLiveSessionsOnly(t *testing.T) {
	socks := evSocketDir(t)
	self := os.Getpid()
	other := testproc.Sleeper(t)
	twinA, twinB := testproc.Sleeper(t), testproc.Sleeper(t)
	alpha := evLiveRecord(t, self, "11111111-aaaa-4aaa-8aaa-000000000001", "alpha", "/src/alpha", filepath.Join(socks, "a.sock"))
	beta := evLiveRecord(t, other, "22222222-bbbb-4bbb-8bbb-000000000002", "beta build", "/src/beta", filepath.Join(socks, "b.sock"))
	twin1 := evLiveRecord(t, twinA, "33333333-cccc-4ccc-8ccc-000000000003", "twin", "/src/t1", filepath.Join(socks, "t1.sock"))
	twin2 := evLiveRecord(t, twinB, "44444444-dddd-4ddd-8ddd-000000000004", "twin", "/src/t2", filepath.Join(socks, "t2.sock"))
	stale := evLiveRecord(t, self, "55555555-eeee-4eee-8eee-000000000005", "gone", "/src/gone", filepath.Join(socks, "g.sock"))
	stale.PID = testproc.DeadPID(t)
	reused := evLiveRecord(t, other, "66666666-ffff-4fff-8fff-000000000006", "reused", "/src/r", filepath.Join(socks, "r.sock"))
	reused.PID, reused.ProcStart = 1, "999999999999"
	mute := evLiveRecord(t, testproc.Sleeper(t), "77777777-aaaa-4aaa-8aaa-000000000007", "mute", "/src/mute", "")
	mute.Version = "2.1.224" // publishes no socket: live, not addressable
	cfg := evConfigDir(t, alpha, beta, twin1, twin2, stale, reused, mute)
	listenAll(t, alpha, beta, twin1, twin2) // live sessions' sockets are there

	tests := []struct {
		name     string
		args     []string
		want     map[string]string // value -> substrings its description must hold
		wantNone bool
	}{
		// The twins' shared name is left out (ambiguous); their ids reach them.
		{"send, empty prefix", []string{"send", ""}, map[string]string{
			"alpha": "/src/alpha", alpha.SessionID: "alpha  /src/alpha",
			"beta build": "/src/beta", beta.SessionID: "beta build  /src/beta",
			twin1.SessionID: "twin  /src/t1", twin2.SessionID: "twin  /src/t2",
		}, false},
		{"show offers the twins' ids", []string{"show", "3333"}, map[string]string{twin1.SessionID: "twin  /src/t1"}, false},
		{"send too", []string{"send", "3333"}, map[string]string{twin1.SessionID: "twin  /src/t1"}, false},
		{"show, name prefix", []string{"show", "al"}, map[string]string{"alpha": "session 11111111"}, false},
		{"show, id prefix", []string{"show", "2222"}, map[string]string{beta.SessionID: "/src/beta"}, false},
		{"show offers a session send cannot reach", []string{"show", "mu"}, map[string]string{"mute": "/src/mute"}, false},
		{"send does not", []string{"send", "mu"}, nil, true},
		{"send does not, by id", []string{"send", "7777"}, nil, true},
		{"send, stale name", []string{"send", "go"}, nil, true},
		{"send, second argument", []string{"send", "alpha", ""}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"__complete", "--config-dir", cfg}, tt.args...)
			r := evRun(t, nil, nil, args...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			got, directive := completions(t, r.stdout)
			assert.Equal(t, ":4", directive, "ShellCompDirectiveNoFileComp")
			if tt.wantNone {
				assert.Empty(t, got)
				return
			}
			assert.Len(t, got, len(tt.want), "got %v", got)
			for v, desc := range tt.want {
				if assert.Contains(t, got, v) {
					assert.Contains(t, got[v], desc)
				}
			}
			for _, never := range []string{"gone", stale.SessionID, "reused", reused.SessionID, "twin"} { // "twin" the name
				assert.NotContains(t, got, never)
			}
		})
	}
}

func TestCompletionMissingRegistryOffersNothing(t *testing.T) {
	r := evRun(t, nil, nil, "__complete", "--config-dir", filepath.Join(t.TempDir(), "none"), "send", "")
	require.Equal(t, 0, r.code)
	got, directive := completions(t, r.stdout)
	assert.Empty(t, got)
	assert.Equal(t, ":4", directive)
}

func TestCompletionTransportFlag(t *testing.T) {
	r := evRun(t, nil, nil, "__complete", "send", "--transport", "")
	require.Equal(t, 0, r.code)
	got, _ := completions(t, r.stdout)
	assert.Equal(t, map[string]string{"courier": "", "inbox": "", "socket": "", "app-server": "", "queue": "", "prompt": ""}, got)
}

func TestCompletionScripts(t *testing.T) {
	tests := []struct {
		shell string
		marks []string
	}{
		{"bash", []string{"__start_peerctl", "__complete"}},
		{"zsh", []string{"#compdef peerctl", "__complete"}},
		{"fish", []string{"complete -c peerctl", "__complete"}},
		{"powershell", []string{"Register-ArgumentCompleter", "__complete"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			r := evRun(t, nil, nil, "completion", tt.shell)
			require.Equal(t, 0, r.code, r.stderr)
			for _, m := range tt.marks {
				assert.Contains(t, r.stdout, m)
			}
		})
	}
	for _, bad := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		r := evRun(t, nil, nil, bad...)
		assert.Equal(t, wire.ExitUsage, r.code, "%v: %s", bad, r.stderr)
		assert.Empty(t, r.stdout)
	}
}

// Names a terminal would not show as themselves, and names send cannot use,
// are never offered; the session id is offered instead, when send accepts it.
func TestCompletionOffersOnlyUsablePrintableNames(t *testing.T) {
	socks := evSocketDir(t)
	type sess struct{ id, name string }
	cases := []sess{
		{"a1111111-aaaa-4aaa-8aaa-000000000001", "csi\u009b31m"},      // C1 control
		{"a2222222-aaaa-4aaa-8aaa-000000000002", "rtl\u202eeman"},     // bidi override
		{"a3333333-aaaa-4aaa-8aaa-000000000003", "line\u2028break"},   // line separator
		{"a4444444-aaaa-4aaa-8aaa-000000000004", "cc-peer:lookalike"}, // read as an endpoint
		{"a5555555-aaaa-4aaa-8aaa-000000000005", "a1111111"},          // another session's id prefix
	}
	var recs []evRecord
	for i, c := range cases {
		recs = append(recs, evLiveRecord(t, testproc.Sleeper(t), c.id, c.name, "/src/"+strconv.Itoa(i), filepath.Join(socks, strconv.Itoa(i)+".sock")))
	}
	cfg := evConfigDir(t, recs...)
	listenAll(t, recs...)
	r := evRun(t, nil, nil, "__complete", "--config-dir", cfg, "send", "")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	got, _ := completions(t, r.stdout)
	for _, c := range cases[:4] {
		assert.NotContains(t, got, c.name)
		assert.Contains(t, got, c.id, "the id is offered instead")
	}
	// A name that is another session's id prefix is ambiguous as an
	// address: not offered; the session's own id reaches it and is.
	assert.NotContains(t, got, cases[4].name)
	assert.Contains(t, got, cases[4].id)
	d := evRun(t, nil, nil, "--config-dir", cfg, "send", "--dry-run", "--transport", "socket", cases[4].name, "hi")
	assert.Equal(t, wire.ExitIdentityMismatch, d.code, "send refuses the name: %s", d.stderr)
	d = evRun(t, nil, nil, "--config-dir", cfg, "send", "--dry-run", "--transport", "socket", cases[4].id, "hi")
	assert.Equal(t, wire.ExitOK, d.code, "send takes the id: %s", d.stderr)
	r = evRun(t, nil, nil, "__complete", "--config-dir", cfg, "show", "a5")
	got, _ = completions(t, r.stdout)
	assert.Contains(t, got, cases[4].id, "show still offers it")
	for _, bad := range []rune{0x9b, 0x202e, 0x2028} {
		assert.NotContains(t, r.stdout, string(bad))
	}
}

// listenAll binds a listener at each record's socket path, as the live
// session's own would be: a session whose socket is not there is listed
// as not addressable.
func listenAll(t *testing.T, recs ...evRecord) {
	t.Helper()
	for _, r := range recs {
		socktest.Listen(t, r.SocketPath, false)
	}
}
