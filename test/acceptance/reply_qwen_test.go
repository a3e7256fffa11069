package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/fakeqwen"
	"github.com/peerctl/peerctl/test/testproc"
)

// fakeQwenSession is a live Qwen Code 0.24.4 record (a sleeper process of
// the test) in a Qwen home of its own, whose inbox stands in for the
// session and answers "pong: <text>" (fakeqwen).
func fakeQwenSession(t *testing.T) (home, sessionID, sock string) {
	t.Helper()
	sock = filepath.Join(catSocketDir(t), "q.sock")
	sessionID = "aaaaaaaa-1111-4111-8111-111111111111"
	fakeqwen.Listen(t, sock, 0, fakeqwen.Pong)
	return fakeqwen.Home(t, testproc.Sleeper(t), sessionID, sock), sessionID, sock
}

// send --await-reply to a Qwen Code session: its receipt, then its reply
// (a user frame from its ipcPath to peerctl's reply inbox) in the same
// shape as a Claude Code reply.
func TestSendAwaitReplyQwenCode(t *testing.T) {
	home, id, sock := fakeQwenSession(t)
	config, _ := catRegistry(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "QWEN_HOME=" + home, "CLAUDE_CONFIG_DIR=" + config}
	r := runPeerctl(t, runOpts{Env: env}, "send", "--await-reply=30s", id, "which branch?")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "pong: which branch?\n", string(r.Stdout))
	assert.Contains(t, string(r.Stderr), "delivered")

	r = runPeerctl(t, runOpts{Env: env}, "send", "--json", "--await-reply=30s", "app-3b", "and now?")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out struct {
		OK      bool   `json:"ok"`
		Outcome string `json:"outcome"`
		MsgID   string `json:"msgId"`
		Reply   struct {
			Text, FromName, From, At string
		} `json:"reply"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	assert.True(t, out.OK)
	assert.Equal(t, "delivered", out.Outcome)
	assert.NotEmpty(t, out.MsgID)
	assert.Equal(t, "pong: and now?", out.Reply.Text)
	assert.Equal(t, "app-3b", out.Reply.FromName)
	assert.Equal(t, sock, out.Reply.From)
	_, err := time.Parse(time.RFC3339, out.Reply.At)
	assert.NoError(t, err)
}

// One relay reaches both harnesses: a Claude Code session through the
// courier and a Qwen Code one through its reply inbox, receipts in input
// order, and both replies as inbound lines.
func TestRelayBothHarnesses(t *testing.T) {
	config, ids := twoRepliers(t)
	home, qid, sock := fakeQwenSession(t)
	r := startRelay(t, fakeEnv(t, "sent", "QWEN_HOME="+home), "--config-dir", config)
	require.Equal(t, "ready", r.next(t)["type"])
	r.write(t, map[string]any{"id": 1, "to": ids[0], "text": "to claude"})
	r.write(t, map[string]any{"id": 2, "to": qid, "text": "to qwen"})
	var receipts []map[string]any
	inbound := map[string]map[string]any{}
	for len(receipts) < 2 || len(inbound) < 2 {
		m := r.next(t)
		switch m["type"] {
		case "receipt":
			receipts = append(receipts, m)
		case "inbound":
			inbound[m["text"].(string)] = m
		default:
			t.Fatalf("unexpected line %v; stderr: %s", m, r.err.String())
		}
	}
	assert.Equal(t, float64(1), receipts[0]["id"])
	assert.Equal(t, "queued", receipts[0]["outcome"])
	assert.Equal(t, "courier", receipts[0]["transport"])
	assert.Equal(t, float64(2), receipts[1]["id"])
	assert.Equal(t, "delivered", receipts[1]["outcome"])
	assert.Equal(t, "inbox", receipts[1]["transport"])
	assert.NotEmpty(t, receipts[1]["msgId"])
	require.Contains(t, inbound, "pong: to qwen")
	assert.Equal(t, sock, inbound["pong: to qwen"]["from"])
	require.Contains(t, inbound, "pong: to claude")
	assert.True(t, strings.HasPrefix(inbound["pong: to claude"]["from"].(string), "uds:"))
	require.NoError(t, r.stdin.Close())
	<-r.done
	assert.Equal(t, 0, r.cmd.ProcessState.ExitCode(), "stderr: %s", r.err.String())
}
