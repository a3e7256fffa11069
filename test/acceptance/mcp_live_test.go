//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1): real Claude Code is the MCP client of peerctl mcp.
// A headless `claude -p --mcp-config` runs peerctl mcp as its MCP server;
// its "model" is a scripted stand-in (test/scriptedmodel) that calls
// mcp__peerctl__send_message toward a real session started by test/livecc;
// peerctl delivers by its default courier (a nested claude -p whose model
// is peerctl's own endpoint). Offline, no login, no token spent.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// mcpToolName is how Claude Code names peerctl's send_message when the MCP
// server is registered as "peerctl": mcp__<server>__<tool>.
const mcpToolName = "mcp__peerctl__send_message"

func TestLiveClaudeCodeSendsThroughPeerctlMCP(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	// The target: a real interactive session. Without a key it settles at
	// once and takes inbox posts (FACTS).
	target := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	text := fmt.Sprintf("peerctl mcp live check %d: \"quoted\", ünï", time.Now().UnixNano())

	result := mcpClientSends(t, bin, target, text, nil)
	assert.False(t, result.IsError, "tool result: %s", result.ResultText())
	var receipt struct {
		OK        bool   `json:"ok"`
		Outcome   string `json:"outcome"`
		Transport string `json:"transport"`
		SessionID string `json:"sessionId"`
		MsgID     string `json:"msgId"`
	}
	require.NoError(t, json.Unmarshal([]byte(result.ResultText()), &receipt), "tool result: %s", result.ResultText())
	assert.True(t, receipt.OK)
	assert.Equal(t, "courier", receipt.Transport)
	assert.Equal(t, target.SessionID, receipt.SessionID)
	assert.NotEmpty(t, receipt.MsgID, "Claude Code's msg_id, from the courier's SendMessage")
	assert.Contains(t, []string{"delivered", "queued"}, receipt.Outcome)

	// The text reached the target's transcript, byte for byte, as a
	// cross-session message from the courier (named "peerctl").
	inner := mustJSON(t, "\n"+text+"\n")
	line := target.WaitTranscript(t, inner[1:len(inner)-1], 60*time.Second)
	assert.Contains(t, line, `"operation":"enqueue"`)
	assert.Contains(t, line, `from-name=\"peerctl\"`)
}

// mcpClientSends runs real Claude Code as the MCP client of peerctl mcp
// (its server's environment adds env): its scripted model calls
// send_message once, to target with text, and the tool's result is
// returned.
func mcpClientSends(t *testing.T, bin string, target *livecc.Session, text string, env map[string]string) scriptedmodel.Block {
	t.Helper()
	// The script calls the tool once, then ends the turn. The send takes
	// the default transport, the courier: a second, nested claude -p whose
	// model is peerctl's own loopback endpoint (no login either).
	var toolID string
	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
		if len(r.Tools) > 0 && r.ToolUses(mcpToolName) == 0 {
			call := scriptedmodel.ToolUse(mcpToolName, map[string]string{"to": target.SessionID, "text": text})
			toolID = call.ID
			return scriptedmodel.Reply{Blocks: []scriptedmodel.Block{call}}
		}
		return scriptedmodel.Say("done")
	})

	// The MCP client: claude -p with its own fresh config dir, HOME, TMPDIR
	// and cwd, onboarding pre-seeded as test/livecc does, and peerctl mcp
	// pointed at the target's registry by --config-dir. Measured on
	// 2.1.328: in -p mode an MCP tool call needs a permission rule, even a
	// read-only one ("Claude requested permissions to use
	// mcp__peerctl__send_message, but you haven't granted it yet");
	// --allowedTools mcp__peerctl__send_message is enough for this one
	// (mcp__peerctl allows every tool of the server). The MCP tools are
	// deferred (offered behind ToolSearch), yet a tool_use naming one runs.
	// --strict-mcp-config keeps any other MCP configuration out.
	root := livecc.NewRoot(t)
	cfgDir, cwd := filepath.Join(root, "config"), filepath.Join(root, "proj")
	require.NoError(t, livecc.SeedConfig(cfgDir, cwd, srv.Key()))
	server := map[string]any{"type": "stdio", "command": peerctlWithMCP(t), "args": []string{"--config-dir", target.ConfigDir, "mcp", "--claude", bin}}
	if len(env) > 0 {
		server["env"] = env
	}
	mcpConfig, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"peerctl": server}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "json", "--no-session-persistence",
		"--strict-mcp-config", "--mcp-config", string(mcpConfig),
		"--allowedTools", mcpToolName)
	cmd.Dir = cwd
	cmd.Env = livecc.Env(cfgDir, "HOME="+filepath.Join(root, "home"), "TMPDIR="+filepath.Join(root, "tmp"),
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY="+srv.Key())
	cmd.Stdin = strings.NewReader("send the message")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "claude -p\nstdout: %s\nstderr: %s", stdout.Bytes(), stderr.Bytes())

	// Claude Code handed the model peerctl's receipt as the tool's result.
	reqs := srv.Requests() // under the server's lock: toolID is read after the script wrote it
	require.NotEmpty(t, toolID, "the script called the tool")
	var result scriptedmodel.Block
	found := false
	for _, r := range reqs {
		if b, ok := r.ToolResult(toolID); ok {
			result, found = b, true
		}
	}
	require.True(t, found, "a request carried the tool's result; stdout: %s", stdout.Bytes())
	return result
}
