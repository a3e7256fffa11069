package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/fakeqwen"
)

// startReplyingQwen serves a Qwen Code session's inbox in a fresh socket folder.
func startReplyingQwen(t *testing.T, delay time.Duration, answer func(string) string) *fakeqwen.Inbox {
	t.Helper()
	return fakeqwen.Listen(t, filepath.Join(evSocketDir(t), "q.Sock"), delay, answer)
}

// send_message with await_reply_seconds returns the target's reply in the
// receipt (here a Qwen Code session's user frame to peerctl's inbox), and
// the call's deadline grows by the wait: a reply that comes after
// --call-timeout but within it is returned.
func TestMCPSendAwaitsTheReply(t *testing.T) {
	q := startReplyingQwen(t, 600*time.Millisecond, fakeqwen.Pong)
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", q.Sock)
	cs := mcpWith(t, evConfigDir(t), home, mcpFlags{callTimeout: 300 * time.Millisecond, confirmTimeout: 5 * time.Second})
	text := okJSON(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "app-3b", "text": "ping", "await_reply_seconds": 30}))
	var got wire.Receipt
	require.NoError(t, json.Unmarshal(text, &got))
	assert.Equal(t, "delivered", got.Outcome)
	assert.Equal(t, "inbox", got.Transport)
	require.NotNil(t, got.Reply, "%s", text)
	assert.Equal(t, "pong: ping", got.Reply.Text)
	assert.Equal(t, q.Sock, got.Reply.From, "a Qwen Code reply's from is the session's ipcPath")
	assert.Equal(t, "app-3b", got.Reply.FromName)
	require.Len(t, q.Frames(), 1)
	assert.Equal(t, q.Frames()[0]["msgId"], got.MsgID)
}

// No reply in time is an error result starting with no_reply that still
// carries the receipt of the message handed over.
func TestMCPSendNoReply(t *testing.T) {
	q := startReplyingQwen(t, 0, func(string) string { return "" })
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", q.Sock)
	cs := mcpWith(t, evConfigDir(t), home, mcpFlags{confirmTimeout: 5 * time.Second})
	text := refused(t, call(t, cs, mcptools.ToolSend, map[string]any{"to": "app-3b", "text": "ping", "await_reply_seconds": 1}), "no_reply")
	_, receipt, ok := strings.Cut(text, "\nreceipt: ")
	require.True(t, ok, text)
	var got wire.Receipt
	require.NoError(t, json.Unmarshal([]byte(receipt), &got))
	assert.False(t, got.OK)
	assert.Equal(t, "delivered", got.Outcome)
	assert.Equal(t, "no_reply", got.Refusal.Reason)
	require.Len(t, q.Frames(), 1)
	assert.Equal(t, q.Frames()[0]["msgId"], got.MsgID)
	// The server goes on serving.
	okJSON(t, call(t, cs, mcptools.ToolList, map[string]any{}))
}

// Awaiting a reply over the socket transport cannot work (no address of
// peerctl's travels with the frame): an error result, nothing sent.
func TestMCPAwaitReplyNotBySocket(t *testing.T) {
	w := newTwoLive(t, false)
	cs := mcpFor(t, w.cfg, mcpFlags{})
	res := call(t, cs, mcptools.ToolSend, map[string]any{"to": "mcp-self", "text": "hi", "transport": "socket", "await_reply_seconds": 5})
	assert.True(t, res.IsError)
	assert.Contains(t, resultText(t, res), "socket")
	assert.Empty(t, w.selfSock.Frames())
}

func TestMCPAwaitReplyInTheSchema(t *testing.T) {
	cs := mcpFor(t, evConfigDir(t), mcpFlags{})
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var send *mcp.Tool
	for _, tool := range res.Tools {
		if tool.Name == mcptools.ToolSend {
			send = tool
		}
	}
	require.NotNil(t, send)
	b, err := json.Marshal(send.InputSchema)
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Type    string   `json:"type"`
			Minimum *float64 `json:"minimum"`
			Maximum *float64 `json:"maximum"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(b, &schema))
	a := schema.Properties["await_reply_seconds"]
	assert.Equal(t, "integer", a.Type)
	require.NotNil(t, a.Minimum)
	require.NotNil(t, a.Maximum)
	assert.Equal(t, 0.0, *a.Minimum)
	assert.Equal(t, float64(mcptools.MaxAwaitReplySeconds), *a.Maximum)
}

// send --await-reply to a Qwen Code session prints its reply on stdout,
// as for a Claude Code session.
func TestSendAwaitReplyQwenCode(t *testing.T) {
	q := startReplyingQwen(t, 0, fakeqwen.Pong)
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", q.Sock)
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t), "QWEN_HOME": home, "HOME": t.TempDir()}
	r := evRun(t, env, nil, "send", "--await-reply=30s", "app-3b", "ping")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "pong: ping\n", r.stdout)
	assert.Contains(t, r.stderr, "delivered")

	r = evRun(t, env, nil, "send", "--await-reply=30s", "--transport", "socket", "app-3b", "ping")
	assert.Equal(t, wire.ExitUsage, r.code, r.stderr)
	r = evRun(t, env, nil, "send", "--await-reply=30s", "--transport", "courier", "app-3b", "ping")
	assert.Equal(t, wire.ExitHarnessUnsupported, r.code, r.stderr)
	assert.Len(t, q.Frames(), 1, "the refused sends sent nothing")
}
