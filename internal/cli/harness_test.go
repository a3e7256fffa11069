package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/fakeqwen"
	"github.com/peerctl/peerctl/test/socktest"
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
	assert.Regexp(t, `app-3b\s+qwen-code\s+aaaaaaaa-`, r.stdout)
	assert.Regexp(t, `build-1a\s+claude-code\s+cccccccc-`, r.stdout)

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
	assert.Equal(t, exitUsage, r.code)
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
		assert.Equal(t, exitHarnessUnsupported, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"reason": "harness_unsupported"`)
	}
	r := evRun(t, env, nil, "send", "--dry-run", "--json", "app-3b", "hi")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"transport": "inbox"`)
	assert.Contains(t, r.stdout, `"fromMode\":\"prompting\"`)
	r = evRun(t, env, nil, "send", "--transport", "carrier-pigeon", "app-3b", "hi")
	assert.Equal(t, exitUsage, r.code)
}
