package scriptedmodel_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// post sends body to srv's path with key and returns the response.
func post(t *testing.T, srv *scriptedmodel.Server, path, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// readSSE parses an event stream: "event:" and "data:" lines, blank line ends one.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data), "data line %q", line)
		case line == "":
			require.NotEmpty(t, cur.name, "an event without a name")
			assert.Equal(t, cur.name, cur.data["type"], "event name and data type agree")
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// A stream answer is the Messages streaming sequence, and accumulating
// its deltas gives back the script's blocks exactly.
func TestStreamReplyAccumulatesToTheScriptsBlocks(t *testing.T) {
	input := map[string]any{"to": "uds:/tmp/x.sock", "message": "ünï \"quoted\"\nline"}
	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Blocks: []scriptedmodel.Block{{Type: "text", Text: "on it"}, scriptedmodel.ToolUse("SendMessage", input)}}
	})
	resp := post(t, srv, "/v1/messages?beta=true", srv.Key(),
		`{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"SendMessage"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readSSE(t, resp.Body)

	var names []string
	text := ""
	var partial strings.Builder
	var toolName string
	for _, e := range events {
		names = append(names, e.name)
		switch e.name {
		case "message_start":
			assert.Equal(t, "m1", e.data["message"].(map[string]any)["model"])
		case "content_block_start":
			if cb := e.data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				toolName = cb["name"].(string)
				assert.NotEmpty(t, cb["id"])
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text += d["text"].(string)
			case "input_json_delta":
				partial.WriteString(d["partial_json"].(string))
			}
		case "message_delta":
			assert.Equal(t, "tool_use", e.data["delta"].(map[string]any)["stop_reason"])
		}
	}
	assert.Equal(t, []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}, names)
	assert.Equal(t, "on it", text)
	assert.Equal(t, "SendMessage", toolName)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(partial.String()), &got))
	assert.Equal(t, input, got)
}

// Without stream the answer is one JSON message; the request is decoded,
// string content becoming a text block and tool results readable as text.
func TestJSONReplyAndDecodedRequest(t *testing.T) {
	var seen *scriptedmodel.Request
	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
		seen = r
		return scriptedmodel.Say("done")
	})
	body := `{"model":"m2","messages":[` +
		`{"role":"user","content":"first"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"SendMessage","input":{"to":"x"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"{\"success\":true}"}]},{"type":"text","text":"second"}]}` +
		`],"tools":[{"name":"ListAgents"},{"name":"SendMessage"}]}`
	resp := post(t, srv, "/v1/messages", srv.Key(), body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var msg struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	assert.Equal(t, "message", msg.Type)
	assert.Equal(t, "assistant", msg.Role)
	assert.Equal(t, "end_turn", msg.StopReason)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "done", msg.Content[0].Text)

	require.NotNil(t, seen)
	assert.True(t, seen.HasTool("SendMessage"))
	assert.False(t, seen.HasTool("Bash"))
	assert.Equal(t, 1, seen.ToolUses("SendMessage"))
	assert.Equal(t, 0, seen.ToolUses("ListAgents"))
	res, ok := seen.ToolResult("toolu_1")
	require.True(t, ok)
	assert.Equal(t, `{"success":true}`, res.ResultText())
	assert.Equal(t, []string{"first", "second"}, seen.UserTexts())
	assert.Equal(t, "/v1/messages", seen.Path)
	assert.Len(t, srv.Requests(), 1)
}

func TestCountTokensAndUnknownPaths(t *testing.T) {
	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
		t.Errorf("no script call expected, got one for %s", r.Path)
		return scriptedmodel.Say("")
	})
	resp := post(t, srv, "/v1/messages/count_tokens?beta=true", srv.Key(), `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	assert.JSONEq(t, `{"input_tokens":1}`, string(b))

	resp = post(t, srv, "/v1/complete", srv.Key(), `{}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Empty(t, srv.Problems(), "an unknown path is not a problem")
}

// recordingTB captures the errors Start reports at cleanup.
type recordingTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Helper() {}

// A wrong key or a body that is no Messages request is refused, and the
// test that started the server is told when it ends.
func TestRefusalsAreReportedToTheTest(t *testing.T) {
	rec := &recordingTB{TB: t}
	calls := 0
	srv := scriptedmodel.Start(rec, func(*scriptedmodel.Request) scriptedmodel.Reply { calls++; return scriptedmodel.Say("x") })

	resp := post(t, srv, "/v1/messages", "sk-ant-someone-else", `{"model":"m","messages":[]}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = post(t, srv, "/v1/messages", srv.Key(), `{"model":"m","messages":[{"role":"user","content":7}]}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "error", e.Type)
	assert.Equal(t, "invalid_request_error", e.Error.Type)
	assert.Equal(t, 0, calls)

	for _, f := range rec.cleanups {
		f()
	}
	require.Len(t, rec.errors, 2, "errors: %q", rec.errors)
	assert.Contains(t, rec.errors[0], "wrong x-api-key")
	assert.Contains(t, rec.errors[1], "neither text nor a list")
}
