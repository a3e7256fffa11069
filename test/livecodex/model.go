//go:build unix

package livecodex

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxBody bounds one request body (Codex sends the whole conversation, its
// instructions and its tool list: tens of KiB).
const maxBody = 32 << 20

// TitleReply is what the default script answers to the TUI's request for a
// one-line title of the task.
const TitleReply = "title"

// Script answers one model request. Scripts may run concurrently (the
// TUI's title request runs beside the turn's); a Reply with Wait holds its
// answer until that channel closes.
type Script func(r *Request) Reply

// Request is one decoded POST .../responses body (the fields a script
// needs; Raw holds all of it).
type Request struct {
	Instructions string
	Input        []Item
	Tools        []Tool
	// Raw is the body as received.
	Raw json.RawMessage
}

// Item is one entry of a request's "input": a message (Role, Texts), a
// function_call (CallID, Name, Arguments) or a function_call_output
// (CallID, Output). Other types keep only Type.
type Item struct {
	Type      string
	Role      string
	Texts     []string
	CallID    string
	Name      string
	Arguments string
	Output    string
}

// Tool is one tool offered to the model: a function (Type "function"), or
// a namespace of functions (Type "namespace", its functions in Tools):
// 0.171.0 offers an MCP server's tools as namespace "mcp__<server>".
type Tool struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Tools []Tool `json:"tools"`
}

// Reply is a script's answer: an assistant message Text, or a
// function_call of Call (a function name as offered, in Namespace when it
// was offered in one) with Arguments (a JSON object as text). Wait, when
// not nil, holds the answer until it closes (or the request is
// abandoned), so that a turn stays running.
type Reply struct {
	Text      string
	Call      string
	Namespace string
	Arguments string
	Wait      <-chan struct{}
}

// IsTitle reports whether the request is the TUI's request for a one-line
// title of the task (0.171.0 asks it beside the first turn, with no tools
// and a user message "Generate a concise, single-line task title …").
func (r *Request) IsTitle() bool {
	return len(r.Tools) == 0 && strings.Contains(r.LastUserText(), "task title")
}

// LastUserText is the text of the newest user message of the input ("" when
// there is none).
func (r *Request) LastUserText() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		if it := r.Input[i]; it.Type == "message" && it.Role == "user" {
			return strings.Join(it.Texts, "\n")
		}
	}
	return ""
}

// LastItem is the newest input item (zero when there is none).
func (r *Request) LastItem() Item {
	if len(r.Input) == 0 {
		return Item{}
	}
	return r.Input[len(r.Input)-1]
}

// FindTool returns the offered function named name, top-level or inside
// a namespace (then also the namespace's name), and whether there is one.
func (r *Request) FindTool(name string) (namespace, function string, ok bool) {
	for _, t := range r.Tools {
		if t.Type == "namespace" {
			for _, f := range t.Tools {
				if f.Name == name {
					return t.Name, f.Name, true
				}
			}
		} else if t.Name == name {
			return "", t.Name, true
		}
	}
	return "", "", false
}

var (
	pingRE = regexp.MustCompile(`ping [^\s<"\\]+`)
	holdRE = regexp.MustCompile(`hold ([^\s<"\\]+)`)
	callRE = regexp.MustCompile(`(?s)call ([A-Za-z0-9_.\-]+) (\{.*\})`)
)

// Model is a stand-in for the OpenAI Responses API on loopback, the model
// of live Codex sessions: POST <URL>/responses answers server-sent events
// in the shape Codex 0.171.0 reads (response.created, one
// response.output_item.done, response.completed with usage), GET
// <URL>/models an empty list. What it answers is its Script's choice; see
// DefaultScript.
type Model struct {
	URL string // base URL, "http://127.0.0.1:<port>/v1"

	script Script
	srv    *http.Server

	mu       sync.Mutex
	requests []*Request
	problems []string
	gates    map[string]chan struct{}
}

// StartModel listens on a fresh 127.0.0.1 port and serves until the test
// ends; then it stops and reports as a test error every request it could
// not read. A nil script is DefaultScript.
func StartModel(t testing.TB, script Script) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("livecodex: model listen: %v", err)
	}
	m := &Model{URL: "http://" + ln.Addr().String() + "/v1", gates: map[string]chan struct{}{}}
	m.script = script
	if script == nil {
		m.script = m.DefaultScript
	}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
	t.Cleanup(func() {
		m.ReleaseAll()
		_ = m.srv.Close()
		for _, p := range m.Problems() {
			t.Errorf("livecodex model: %s", p)
		}
	})
	return m
}

// DefaultScript is the script of a Model started without one. On the newest
// user text (the envelope peerctl wraps a message in included):
//
//   - the title request: TitleReply;
//   - after a function_call_output: "tool said: <output>";
//   - "call <function> <json object>": a function_call of the offered
//     function of that name (see FindTool), with that object as its
//     arguments;
//   - "hold <gate>": "held <gate>", answered only once Release(gate) is
//     called, so that the turn keeps the thread busy until then;
//   - "ping <token>": "pong: ping <token>" (the last one in the text);
//   - anything else: "ok".
func (m *Model) DefaultScript(r *Request) Reply {
	if r.IsTitle() {
		return Reply{Text: TitleReply}
	}
	if last := r.LastItem(); last.Type == "function_call_output" {
		return Reply{Text: "tool said: " + last.Output}
	}
	text := r.LastUserText()
	if c := callRE.FindStringSubmatch(text); c != nil {
		if ns, name, ok := r.FindTool(c[1]); ok {
			return Reply{Call: name, Namespace: ns, Arguments: c[2]}
		}
		return Reply{Text: "no tool " + c[1]}
	}
	if h := holdRE.FindStringSubmatch(text); h != nil {
		return Reply{Text: "held " + h[1], Wait: m.gate(h[1])}
	}
	if p := pingRE.FindAllString(text, -1); p != nil {
		return Reply{Text: "pong: " + p[len(p)-1]}
	}
	return Reply{Text: "ok"}
}

func (m *Model) gate(name string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.gates[name]
	if !ok {
		g = make(chan struct{})
		m.gates[name] = g
	}
	return g
}

// Release lets every answer held on gate (a "hold <gate>" turn) go, now and
// later.
func (m *Model) Release(gate string) {
	g := m.gate(gate)
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

// ReleaseAll releases every gate there is.
func (m *Model) ReleaseAll() {
	m.mu.Lock()
	names := make([]string, 0, len(m.gates))
	for n := range m.gates {
		names = append(names, n)
	}
	m.mu.Unlock()
	for _, n := range names {
		m.Release(n)
	}
}

// Requests returns the model requests served so far, oldest first.
func (m *Model) Requests() []*Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Request(nil), m.requests...)
}

// Held reports whether a request holding on gate has come in (the turn
// that keeps its thread busy is running).
func (m *Model) Held(gate string) bool {
	for _, r := range m.Requests() {
		if !r.IsTitle() && holdRE.FindStringSubmatch(r.LastUserText()) != nil && holdRE.FindStringSubmatch(r.LastUserText())[1] == gate {
			return true
		}
	}
	return false
}

// Problems returns what the model could not read, one line each.
func (m *Model) Problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.problems...)
}

// ServeHTTP implements http.Handler.
func (m *Model) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	path := strings.TrimSuffix(hr.URL.Path, "/")
	switch {
	case hr.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	case hr.Method != http.MethodPost || !strings.HasSuffix(path, "/responses"):
		http.NotFound(w, hr)
		return
	}
	body, err := io.ReadAll(io.LimitReader(hr.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		m.problem(w, "body of %s unreadable or over %d bytes (%v)", hr.URL.Path, maxBody, err)
		return
	}
	req, err := decode(body)
	if err != nil {
		m.problem(w, "%s: %v", hr.URL.Path, err)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	reply := m.script(req)
	if reply.Wait != nil {
		select {
		case <-reply.Wait:
		case <-hr.Context().Done():
			return
		}
	}
	write(w, reply)
}

func (m *Model) problem(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	m.mu.Lock()
	m.problems = append(m.problems, msg)
	m.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// decode reads a Responses request body.
func decode(body []byte) (*Request, error) {
	var wire struct {
		Instructions string            `json:"instructions"`
		Input        []json.RawMessage `json:"input"`
		Tools        []Tool            `json:"tools"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("not a Responses request: %w", err)
	}
	req := &Request{Instructions: wire.Instructions, Tools: wire.Tools, Raw: body}
	for i, raw := range wire.Input {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			CallID  string          `json:"call_id"`
			Name    string          `json:"name"`
			Args    string          `json:"arguments"`
			Output  json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		item := Item{Type: it.Type, Role: it.Role, CallID: it.CallID, Name: it.Name, Arguments: it.Args, Output: flatten(it.Output)}
		if it.Type == "message" {
			var parts []struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(it.Content, &parts) == nil {
				for _, p := range parts {
					item.Texts = append(item.Texts, p.Text)
				}
			}
		}
		req.Input = append(req.Input, item)
	}
	return req, nil
}

// flatten is a function_call_output's output as text: the string itself,
// or its parts' texts joined by newlines, or the JSON as it came.
func flatten(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n")
	}
	return string(raw)
}

// write answers one turn as the three server-sent events Codex needs.
func write(w http.ResponseWriter, reply Reply) {
	id := "resp_" + randHex(8)
	var item map[string]any
	if reply.Call != "" {
		args := reply.Arguments
		if args == "" {
			args = "{}"
		}
		item = map[string]any{"type": "function_call", "id": "fc_" + randHex(8), "call_id": "call_" + randHex(8),
			"name": reply.Call, "arguments": args}
		if reply.Namespace != "" {
			item["namespace"] = reply.Namespace
		}
	} else {
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_" + randHex(8),
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text}}}
	}
	usage := map[string]any{"input_tokens": 1, "input_tokens_details": nil, "output_tokens": 1,
		"output_tokens_details": nil, "total_tokens": 2}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, ev := range []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": id}},
		{"type": "response.output_item.done", "item": item},
		{"type": "response.completed", "response": map[string]any{"id": id, "usage": usage}},
	} {
		raw, _ := json.Marshal(ev)
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], raw)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
