//go:build unix

package liveopencode

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Model is a stand-in OpenAI-compatible chat-completions endpoint on
// loopback, the model of every opencode the tests start (provider "local",
// model "pong-1", @ai-sdk/openai-compatible, built into opencode-ai
// 1.18.33). It serves GET /v1/models (one model, pong-1) and POST
// /v1/chat/completions, answering every request "pong: <the last user
// text, trimmed>", streamed as `data: {chat.completion.chunk}` lines and
// `data: [DONE]` when "stream" is true (opencode streams; its title
// request too). URL is the base opencode is given ("http://127.0.0.1:N/v1").
//
// One scripted tool call: when the last message is a user turn whose text
// starts with ShellPrefix and the request offers a tool named "bash" (a
// root made with Root.AllowShell), the answer is one call of that tool
// with {"command": <the rest of the text>, "description": …}, streamed as
// OpenAI chat-completions `delta.tool_calls` chunks and finish_reason
// "tool_calls"; when the last message is that tool's result (role
// "tool"), the answer is ToolAnswer(<its content>).
type Model struct {
	URL string

	mu       sync.Mutex
	requests []string // the last user text of each chat request
}

// StartModel starts a Model, stopped when the test ends.
func StartModel(t testing.TB) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("liveopencode: model: %v", err)
	}
	m := &Model{URL: "http://" + ln.Addr().String() + "/v1"}
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return m
}

// Requests are the last user texts of the chat requests so far.
func (m *Model) Requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.requests...)
}

// Answer is what the model answers a last user text.
func Answer(last string) string { return "pong: " + strings.TrimSpace(last) }

// ShellPrefix starts a user text the model answers with a bash tool call
// running the rest of the text.
const ShellPrefix = "run-shell: "

// ToolAnswer is what the model answers a tool's result.
func ToolAnswer(result string) string { return "tool said: " + result }

// ServeHTTP answers the two routes; anything else is 404.
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/models"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"pong-1","object":"model","created":0,"owned_by":"local"}]}`)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		m.chat(w, r)
	default:
		http.NotFound(w, r)
	}
}

// chatRequest is the part of a chat-completions request read here.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// offers reports whether the request offers a tool named name.
func (r chatRequest) offers(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// textOf is a message content's text: a string, or the text parts of a
// list joined by spaces.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, " ")
}

func (m *Model) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	last := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			last = textOf(req.Messages[i].Content)
			break
		}
	}
	m.mu.Lock()
	m.requests = append(m.requests, last)
	m.mu.Unlock()
	answer := Answer(last)
	var shell string // the command of the scripted tool call, if this is one
	if n := len(req.Messages); n > 0 {
		switch final := req.Messages[n-1]; {
		case final.Role == "tool":
			answer = ToolAnswer(textOf(final.Content))
		case final.Role == "user" && strings.HasPrefix(strings.TrimSpace(last), ShellPrefix) && req.offers("bash"):
			shell = strings.TrimPrefix(strings.TrimSpace(last), ShellPrefix)
		}
	}
	id := fmt.Sprintf("chatcmpl-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if shell != "" {
		m.toolCall(w, req.Model, id, created, usage, shell)
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": answer}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(choices []any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model, "choices": choices}
	}
	send(chunk([]any{map[string]any{"index": 0, "delta": map[string]string{"role": "assistant", "content": ""}, "finish_reason": nil}}))
	for rs := []rune(answer); len(rs) > 0; {
		n := min(8, len(rs))
		send(chunk([]any{map[string]any{"index": 0, "delta": map[string]string{"content": string(rs[:n])}, "finish_reason": nil}}))
		rs = rs[n:]
	}
	send(chunk([]any{map[string]any{"index": 0, "delta": map[string]string{}, "finish_reason": "stop"}}))
	c := chunk([]any{})
	c["usage"] = usage
	send(c)
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// toolCall streams one call of the bash tool running command
// (OpenAI chat-completions streaming: the call's id, type and name in its
// first delta, its arguments as a JSON string, then finish_reason
// "tool_calls").
func (m *Model) toolCall(w http.ResponseWriter, model, id string, created int64, usage map[string]int, command string) {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "Runs the command the test scripted"})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(choices []any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": nil,
		"tool_calls": []any{map[string]any{"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]string{"name": "bash", "arguments": string(args)}}}}, "finish_reason": nil}})
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}})
	b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{}, "usage": usage})
	_, _ = fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	if flusher != nil {
		flusher.Flush()
	}
}
