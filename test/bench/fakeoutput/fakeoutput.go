// Package fakeoutput builds a courier's stdout shaped like `claude -p
// --output-format json --verbose` of Claude Code 2.1.328 for a run that
// called ListAgents, then SendMessage with the given name and text, and
// answered SENT. It is shared by the courier benchmarks and the fake claude
// of scripts/bench.sh.
package fakeoutput

import (
	"encoding/json"
	"fmt"
	"strings"
)

const sessionID = "addd4a66-633e-42da-945b-e81a776d77ec"

// Verbose returns the JSON array (newline-terminated): an init message, a
// ListAgents call whose result lists agents+1 sessions (name among them),
// a SendMessage call to name carrying text, its result, the final
// assistant text and the result object.
func Verbose(name, text string, agents int) []byte {
	usage := map[string]any{"input_tokens": 1200, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 9000,
		"output_tokens": 40, "service_tier": "standard"}
	assistant := func(id string, content ...map[string]any) map[string]any {
		return map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_" + id, "type": "message",
			"role": "assistant", "model": "claude-haiku-4-5", "content": content, "stop_reason": "tool_use", "usage": usage},
			"parent_tool_use_id": nil, "session_id": sessionID, "uuid": "u-a-" + id}
	}
	user := func(id string, content ...map[string]any) map[string]any {
		return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content},
			"parent_tool_use_id": nil, "session_id": sessionID, "uuid": "u-u-" + id}
	}
	var rows strings.Builder
	rows.WriteString("Active agents:\n")
	for i := range agents {
		fmt.Fprintf(&rows, "- proj-%d (pid %d, idle) /home/dev/src/proj-%d\n", i, 4000+i, i)
	}
	fmt.Fprintf(&rows, "- %s (pid 4652, idle) /home/dev/src/shop\n", name)
	msgs := []any{
		map[string]any{"type": "system", "subtype": "init", "cwd": "/tmp", "session_id": sessionID,
			"tools": []string{"ListAgents", "SendMessage"}, "mcp_servers": []any{}, "model": "claude-haiku-4-5",
			"permissionMode": "default", "slash_commands": []string{"compact", "context", "cost", "init", "review"},
			"apiKeySource": "ANTHROPIC_API_KEY", "output_style": "default", "agents": []string{"general-purpose"},
			"uuid": "u-init"},
		assistant("1", map[string]any{"type": "tool_use", "id": "toolu_01", "name": "ListAgents", "input": map[string]any{}}),
		user("1", map[string]any{"type": "tool_result", "tool_use_id": "toolu_01", "content": rows.String()}),
		assistant("2", map[string]any{"type": "tool_use", "id": "toolu_02", "name": "SendMessage",
			"input": map[string]any{"to": name, "summary": "relayed by peerctl", "message": text}}),
		user("2", map[string]any{"type": "tool_result", "tool_use_id": "toolu_02", "content": "Message sent to " + name}),
		assistant("3", map[string]any{"type": "text", "text": "SENT"}),
		map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 2961,
			"duration_api_ms": 2800, "num_turns": 3, "result": "SENT", "stop_reason": "end_turn", "session_id": sessionID,
			"total_cost_usd": 0.0021, "usage": usage, "modelUsage": map[string]any{}, "permission_denials": []any{},
			"uuid": "u-result"},
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		panic(fmt.Sprintf("fakeoutput: marshal: %v", err)) // only maps of strings and numbers: cannot fail
	}
	return append(out, '\n')
}
