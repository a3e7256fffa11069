// Package scriptedmodel is a scripted stand-in for the Anthropic Messages API,
// for tests that run real Claude Code with no model and no login.
//
// Claude Code sends its model requests to $ANTHROPIC_BASE_URL when that is set
// (measured on 2.1.328 and 2.1.332, see docs/CLAUDE-CODE-FACTS.md): every turn
// is a POST /v1/messages?beta=true with the key in the x-api-key header and
// "stream": true, and the answer must be server-sent events in the shape of the
// Anthropic Messages streaming API (https://docs.anthropic.com/en/api/messages-streaming):
// message_start, then content_block_start / content_block_delta /
// content_block_stop for each block, message_delta with the stop_reason,
// message_stop. A tool_use block in the answer makes Claude Code run that
// tool for real; its result comes back in the next request.
//
// A Server listens on 127.0.0.1 (a fresh port), checks the key, decodes each
// request and asks the test's Script what to answer. It serves:
//
//	POST /v1/messages               the Script's Reply: SSE when "stream" is true, one JSON message otherwise
//	POST /v1/messages/count_tokens  {"input_tokens": 1}
//	anything else                   404 with an Anthropic-style error body
//
// Use it by starting Claude Code with ANTHROPIC_BASE_URL=srv.URL() and
// ANTHROPIC_API_KEY=srv.Key(). A Script is called for every model request,
// including Claude Code's side requests (a title, a quota probe): tell them
// apart with Request helpers such as HasTool. Scripts run one at a time.
//
// Typical script for a one-shot tool call, answering it only once (a Claude
// Code conversation carries role "system" entries after a tool result, so
// "the last message is a tool result" is the wrong test; count what the
// conversation already holds instead):
//
//	srv := scriptedmodel.Start(t, func(r *scriptedmodel.Request) scriptedmodel.Reply {
//		if r.HasTool("SendMessage") && r.ToolUses("SendMessage") == 0 {
//			return scriptedmodel.Reply{Blocks: []scriptedmodel.Block{
//				scriptedmodel.ToolUse("SendMessage", map[string]string{"to": "uds:/path", "message": "hi"})}}
//		}
//		return scriptedmodel.Say("done")
//	})
package scriptedmodel

import (
	"crypto/rand"
	"encoding/hex"
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

// maxBody bounds one request body (Claude Code's requests carry the whole
// conversation and tool list: tens of KiB).
const maxBody = 32 << 20

// Script answers one model request. It must not block for long: Claude
// Code waits for the answer.
type Script func(r *Request) Reply

// Request is one decoded POST /v1/messages body (the fields a script needs;
// Raw holds all of it).
type Request struct {
	Model    string
	Stream   bool
	Messages []Message
	Tools    []Tool
	// Raw is the body as received.
	Raw json.RawMessage
	// Path is the request path with its query ("/v1/messages?beta=true").
	Path string
}

// Message is one conversation entry. Content is always a list: a string
// content is decoded as one text block.
type Message struct {
	Role    string
	Content []Block
}

// Tool is one tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Block is one content block, in a request or a Reply. Type is "text",
// "tool_use" or "tool_result" (others are kept as received, in Raw).
type Block struct {
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// ID, Name and Input belong to a tool_use block.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError belong to a tool_result block;
	// Content is a string or a list of blocks (see ResultText).
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Raw is the block as received (empty in a Reply).
	Raw json.RawMessage `json:"-"`
}

// ResultText is a tool_result block's content as text: the string itself,
// or its text blocks joined by newlines.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []Block
	if json.Unmarshal(b.Content, &blocks) != nil {
		return string(b.Content)
	}
	var parts []string
	for _, c := range blocks {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Reply is a script's answer: content blocks and a stop reason. StopReason
// "" means "tool_use" when a block is a tool_use, else "end_turn".
type Reply struct {
	Blocks     []Block
	StopReason string
}

// Say is a Reply of one text block that ends the turn.
func Say(text string) Reply { return Reply{Blocks: []Block{{Type: "text", Text: text}}} }

// ToolUse is a tool_use block calling name with input (marshalled to JSON)
// under a fresh id. It panics when input does not marshal (a test bug).
func ToolUse(name string, input any) Block {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(fmt.Sprintf("scriptedmodel: tool_use %s input: %v", name, err))
	}
	return Block{Type: "tool_use", ID: "toolu_" + randHex(12), Name: name, Input: raw}
}

// HasTool reports whether the request offers a tool named name.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolUses counts the tool_use blocks calling name in the conversation's
// assistant messages (0 before the model has called it).
func (r *Request) ToolUses(name string) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.Name == name {
				n++
			}
		}
	}
	return n
}

// ToolResult returns the tool_result block answering the tool_use with id,
// and whether there is one.
func (r *Request) ToolResult(id string) (Block, bool) {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b, true
			}
		}
	}
	return Block{}, false
}

// UserTexts returns the text blocks of the user messages, oldest first
// (tool results excluded).
func (r *Request) UserTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// Server is a running stand-in. Build it with Start.
type Server struct {
	url    string
	key    string
	script Script
	srv    *http.Server

	mu       sync.Mutex // serialises scripts and guards requests
	requests []*Request
	problems []string
}

// Start listens on a fresh 127.0.0.1 port with a fresh key and serves until
// the test ends; then it stops, and reports as a test error every request
// it had to refuse (a wrong key, a body that was not a Messages request).
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("scriptedmodel: listen: %v", err)
	}
	s := &Server{url: "http://" + ln.Addr().String(), key: "sk-ant-scripted-" + randHex(16), script: script}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.srv.Close()
		for _, p := range s.Problems() {
			t.Errorf("scriptedmodel: %s", p)
		}
	})
	return s
}

// URL is the base URL for ANTHROPIC_BASE_URL ("http://127.0.0.1:<port>").
func (s *Server) URL() string { return s.url }

// Key is the API key the server accepts (for ANTHROPIC_API_KEY). It is not
// a real key: it only ties requests to this run.
func (s *Server) Key() string { return s.key }

// Requests returns the model requests served so far, oldest first.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Problems returns what the server refused so far, one line each.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

func (s *Server) problem(w http.ResponseWriter, status int, kind, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.problems = append(s.problems, msg)
	s.mu.Unlock()
	writeError(w, status, kind, msg)
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": msg}})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/messages" && r.URL.Path != "/v1/messages/count_tokens") {
		// Not a problem: Claude Code may probe other paths; it gets what a
		// server without them answers.
		writeError(w, http.StatusNotFound, "not_found_error", r.Method+" "+r.URL.Path+" is not served here")
		return
	}
	if got := r.Header.Get("x-api-key"); got != s.key {
		s.problem(w, http.StatusUnauthorized, "authentication_error", "request to %s with the wrong x-api-key", r.URL.Path)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		s.problem(w, http.StatusBadRequest, "invalid_request_error", "request to %s: body unreadable or over %d bytes (%v)", r.URL.Path, maxBody, err)
		return
	}
	if r.URL.Path == "/v1/messages/count_tokens" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":1}`)
		return
	}
	req, err := decode(body)
	if err != nil {
		s.problem(w, http.StatusBadRequest, "invalid_request_error", "request to %s: %v", r.URL.Path, err)
		return
	}
	req.Path = r.URL.RequestURI()
	s.mu.Lock()
	s.requests = append(s.requests, req)
	reply := s.script(req)
	s.mu.Unlock()
	write(w, req, reply)
}

// decode reads a Messages request, turning string contents into text blocks.
func decode(body []byte) (*Request, error) {
	var wire struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("not a Messages request: %w", err)
	}
	req := &Request{Model: wire.Model, Stream: wire.Stream, Tools: wire.Tools, Raw: body}
	for i, m := range wire.Messages {
		msg := Message{Role: m.Role}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			msg.Content = []Block{{Type: "text", Text: text}}
		} else {
			var raws []json.RawMessage
			if err := json.Unmarshal(m.Content, &raws); err != nil {
				return nil, fmt.Errorf("message %d: content is neither text nor a list: %w", i, err)
			}
			for j, raw := range raws {
				var b Block
				if err := json.Unmarshal(raw, &b); err != nil {
					return nil, fmt.Errorf("message %d block %d: %w", i, j, err)
				}
				b.Raw = raw
				msg.Content = append(msg.Content, b)
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// write sends reply as one JSON message or as server-sent events.
func write(w http.ResponseWriter, req *Request, reply Reply) {
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		for _, b := range reply.Blocks {
			if b.Type == "tool_use" {
				stop = "tool_use"
			}
		}
	}
	id := "msg_" + randHex(12)
	usage := map[string]int{"input_tokens": 1, "output_tokens": 1}
	blocks := make([]map[string]any, len(reply.Blocks))
	for i, b := range reply.Blocks {
		blocks[i] = wireBlock(b)
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data map[string]any) {
		data["type"] = name
		raw, _ := json.Marshal(data)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, raw)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	for i, b := range reply.Blocks {
		start := wireBlock(b)
		var delta map[string]any
		switch b.Type {
		case "text":
			start["text"] = ""
			delta = map[string]any{"type": "text_delta", "text": b.Text}
		case "tool_use":
			start["input"] = map[string]any{}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(inputOrEmpty(b.Input))}
		}
		event("content_block_start", map[string]any{"index": i, "content_block": start})
		if delta != nil {
			event("content_block_delta", map[string]any{"index": i, "delta": delta})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 1}})
	event("message_stop", map[string]any{})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// wireBlock is b as the Messages API writes an assistant content block.
func wireBlock(b Block) map[string]any {
	switch b.Type {
	case "text":
		return map[string]any{"type": "text", "text": b.Text}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(inputOrEmpty(b.Input))}
	default:
		raw, _ := json.Marshal(b)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
}

func inputOrEmpty(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
