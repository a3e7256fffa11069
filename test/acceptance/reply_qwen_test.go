package acceptance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/test/testproc"
)

const fakeQwenToken = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff"

// fakeQwenSession is a live Qwen Code 0.24.4 record (a sleeper process of
// the test) in a Qwen home of its own, whose inbox stands in for the
// session: it checks the auth line, reads the user frame and closes, then
// connects to the frame's from with its replyToken and writes a delivered
// receipt and a reply, "pong: <text>", as a user frame from its ipcPath.
func fakeQwenSession(t *testing.T) (home, sessionID, sock string) {
	t.Helper()
	pid := testproc.Sleeper(t)
	start, err := procliveness.StartTime("/proc", pid)
	require.NoError(t, err)
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	ns, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	sock = filepath.Join(catSocketDir(t), "q.sock")
	sessionID = "aaaaaaaa-1111-4111-8111-111111111111"
	home = t.TempDir()
	dir := filepath.Join(home, "sessions")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	rec := fmt.Sprintf(`{"schemaVersion":1,"pid":%d,"procStart":"%s:%s","pidNs":%s,"sessionId":%q,"cwd":"/w/app","name":"app-3b","startedAt":1796142262298,"qwenVersion":"0.24.4","kind":"tui","ipcPath":%q,"ipcToken":%q}`,
		pid, strings.TrimSpace(string(boot)), start, ns, sessionID, sock, fakeQwenToken)
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", pid)), []byte(rec), 0o600))
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answerQwen(c, sock)
		}
	}()
	return home, sessionID, sock
}

func answerQwen(c net.Conn, sock string) {
	sc := bufio.NewScanner(c)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			lines = append(lines, m)
		}
	}
	c.Close()
	if len(lines) < 2 || lines[0]["token"] != fakeQwenToken {
		return
	}
	fr := lines[1]
	back, err := net.Dial("unix", fr["from"].(string))
	if err != nil {
		return
	}
	defer back.Close()
	enc := json.NewEncoder(back)
	_ = enc.Encode(map[string]any{"msgV": 1, "type": "auth", "token": fr["replyToken"]})
	_ = enc.Encode(map[string]any{"msgV": 1, "msgId": "r-" + fr["msgId"].(string), "type": "control", "action": "delivery_status",
		"status": "delivered", "origMsgId": fr["msgId"], "from": sock})
	text := fr["message"].(map[string]any)["content"].(string)
	_ = enc.Encode(map[string]any{"msgV": 1, "msgId": "p-" + fr["msgId"].(string), "type": "user", "from": sock, "fromName": "app-3b",
		"message": map[string]any{"role": "user", "content": "pong: " + text}})
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
