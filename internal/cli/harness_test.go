package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/fakeqwen"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// qwenHome makes a Qwen Code home whose registry holds one live record for
// this test process.
func qwenHome(t *testing.T, sessionID, ipcPath string) string {
	return fakeqwen.Home(t, os.Getpid(), sessionID, ipcPath)
}

func TestListBothHarnesses(t *testing.T) {
	ppid := os.Getppid()
	cfg := evConfigDir(t, evLiveRecord(t, ppid, "cccccccc-3333-4333-8333-333333333333", "build-1a", "/w/build", "/tmp/cc-socks/1.sock"))
	qsock := filepath.Join(evSocketDir(t), "q1.sock")
	socktest.Listen(t, qsock, false) // list says not addressable when no socket is there
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", qsock)
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": home}

	r := evRun(t, env, nil, "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "HARNESS")
	assert.Regexp(t, `app-3b\s+qwen-code\s+aaaaaaaa\s`, r.stdout)
	assert.Regexp(t, `build-1a\s+claude-code\s+cccccccc\s`, r.stdout)

	r = evRun(t, env, nil, "list", "--json", "--harness", "qwen-code")
	require.Equal(t, 0, r.code, r.stderr)
	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "qwen-code", got[0]["harness"])
	assert.Equal(t, fmt.Sprintf("qwen-peer:v1:%d:aaaaaaaa-1111-4111-8111-111111111111:%s", os.Getpid(), qsock), got[0]["endpoint"])

	r = evRun(t, env, nil, "list", "--json", "--harness", "claude-code")
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "claude-code", got[0]["harness"])

	// --qwen-home wins over $QWEN_HOME.
	r = evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir()}, nil, "--qwen-home", home, "list", "--harness", "qwen-code")
	assert.Contains(t, r.stdout, "app-3b")

	r = evRun(t, env, nil, "list", "--harness", "qwen")
	assert.Equal(t, wire.ExitUsage, r.code)
	assert.Contains(t, r.stderr, `unknown harness "qwen"`)

	// The token is never printed, by any reading command.
	for _, args := range [][]string{{"list", "--all", "--json"}, {"show", "app-3b", "--json"}, {"show", "app-3b"},
		{"send", "--dry-run", "--json", "app-3b", "hi"}, {"send", "--dry-run", "app-3b", "hi"}, {"--debug", "list"}} {
		r := evRun(t, env, nil, args...)
		assert.NotContains(t, r.stdout+r.stderr, fakeqwen.Token, "%v", args)
		assert.NotContains(t, r.stdout+r.stderr, "feedface", "%v", args)
	}
}

func TestSendTransportMustFitTheHarness(t *testing.T) {
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", "/run/q/1.sock")
	env := map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir(), "QWEN_HOME": home}
	for _, tr := range []string{"courier", "socket"} {
		r := evRun(t, env, nil, "send", "--json", "--transport", tr, "app-3b", "hi")
		assert.Equal(t, wire.ExitHarnessUnsupported, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"reason": "harness_unsupported"`)
	}
	r := evRun(t, env, nil, "send", "--dry-run", "--json", "app-3b", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"transport": "inbox"`)
	assert.Contains(t, r.stdout, `"fromMode\":\"prompting\"`)
	r = evRun(t, env, nil, "send", "--transport", "carrier-pigeon", "app-3b", "hi")
	assert.Equal(t, wire.ExitUsage, r.code)
}

// TestListFitsEightyColumns: the table shows each session id by its
// shortest unique prefix of 8+ characters (as git shows commits), so a
// typical listing fits 80 columns; show and send take that prefix; --wide
// shows the full ids; --json is unchanged.
func TestListFitsEightyColumns(t *testing.T) {
	sock := evSocketDir(t)
	idA := "26df9a5b-d23c-4223-a45d-b9ec61fda652"
	idB := "26df9a5b-a8f8-4b1f-b979-950c805fd8b1" // shares 9 characters with idA
	idQ := "aaaaaaaa-1111-4111-8111-111111111111"
	a := evLiveRecord(t, testproc.Sleeper(t), idA, "proj-89", "/home/dev/src/shop", sock+"/a.sock")
	b := evLiveRecord(t, testproc.Sleeper(t), idB, "build-3f", "/home/dev/src/api", sock+"/b.sock")
	listenAll(t, a, b)
	qsock := filepath.Join(sock, "q.sock")
	socktest.Listen(t, qsock, false)
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, a, b), "QWEN_HOME": qwenHome(t, idQ, qsock)}

	r := evRun(t, env, nil, "list")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%q", line)
	}
	for _, short := range []string{"26df9a5b-d ", "26df9a5b-a ", "aaaaaaaa "} {
		assert.Contains(t, r.stdout, short)
	}
	assert.NotContains(t, r.stdout, idA)
	// --harness keeps one harness but not the others' ids out of the prefix.
	r = evRun(t, env, nil, "list", "--harness", "claude-code")
	assert.Contains(t, r.stdout, "26df9a5b-d ")
	for short, id := range map[string]string{"26df9a5b-d": idA, "26df9a5b-a": idB, "aaaaaaaa": idQ} {
		s := evRun(t, env, nil, "show", short)
		require.Equal(t, wire.ExitOK, s.code, "show %s: %s", short, s.stderr)
		assert.Contains(t, s.stdout, id)
	}
	d := evRun(t, env, nil, "send", "--dry-run", "--transport", "socket", "26df9a5b-a", "hi")
	assert.Equal(t, wire.ExitOK, d.code, d.stderr)
	assert.Contains(t, d.stdout, idB)

	r = evRun(t, env, nil, "list", "--wide")
	for _, id := range []string{idA, idB, idQ} {
		assert.Contains(t, r.stdout, id)
	}
	r = evRun(t, env, nil, "list", "--all")
	assert.Contains(t, r.stdout, "26df9a5b-d ")
	r = evRun(t, env, nil, "list", "--json")
	var got []wire.Session
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.ElementsMatch(t, []string{idA, idB, idQ}, []string{got[0].SessionID, got[1].SessionID, got[2].SessionID})
}

// list --harness X reads harness X's registry only: a Codex home whose
// control socket is not ours (the Codex registry cannot be read) costs
// `list --harness claude-code` nothing, not even a warning; `list` of
// every harness still says so (issue 28).
func TestListHarnessReadsThatHarnessOnly(t *testing.T) {
	sock := evSocketDir(t)
	a := evLiveRecord(t, testproc.Sleeper(t), "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89", "/home/dev/src/shop", sock+"/a.sock")
	listenAll(t, a)
	codexHome := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(codexHome, "app-server-control"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(codexHome, "app-server-control", "app-server-control.sock"), nil, 0o600))
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, a), "QWEN_HOME": t.TempDir(), "CODEX_HOME": codexHome}

	r := evRun(t, env, nil, "list", "--harness", "claude-code")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "proj-89")
	assert.NotContains(t, r.stderr, "codex", "the Codex registry was not read")

	r = evRun(t, env, nil, "list")
	assert.Equal(t, wire.ExitError, r.code, "a harness in scope was not read")
	assert.Contains(t, r.stderr, "codex: registry not read")
}
