//go:build unix

package liveqwen

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// StubReply is what the stub model answers to every chat completion.
const StubReply = "STUB-REPLY: message received."

// Stub is an offline OpenAI-compatible chat endpoint on loopback, the model
// of a live session: every /v1/chat/completions answers StubReply (as one
// SSE stream when "stream" is true, the shape Qwen Code 0.24.4 reads), and
// /v1/models lists one model. Without some model a Qwen Code TUI retries an
// unreachable API every few seconds and re-logs an inbound message each
// time. It records the last user text of every request.
type Stub struct {
	URL string // base URL, "http://127.0.0.1:<port>/v1"
	srv *http.Server

	mu    sync.Mutex
	lasts []string
	held  chan struct{} // non-nil: chat answers wait for it to close (Hold)
}

// Hold makes every chat answer from now on wait until release is called,
// so that the session's turn runs on and what is sent to it meanwhile is
// queued; release also runs when the test ends.
func (s *Stub) Hold(t testing.TB) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.held = gate
	var once sync.Once
	release = func() {
		once.Do(func() {
			s.mu.Lock()
			if s.held == gate {
				s.held = nil
			}
			s.mu.Unlock()
			close(gate)
		})
	}
	t.Cleanup(release)
	return release
}

// NewStub starts a stub and stops it when the test ends.
func NewStub(t testing.TB) *Stub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("liveqwen: stub listen: %v", err)
	}
	s := &Stub{URL: "http://" + ln.Addr().String() + "/v1"}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// Prompts returns the last user message text of every chat request so far.
func (s *Stub) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lasts...)
}

type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (s *Stub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-model", "object": "model", "owned_by": "stub"}}})
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"error": map[string]any{"message": "not found"}})
		return
	}
	var req chatRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	if n := len(req.Messages); n > 0 {
		s.mu.Lock()
		s.lasts = append(s.lasts, text(req.Messages[n-1].Content))
		s.mu.Unlock()
	}
	s.mu.Lock()
	gate := s.held
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	now := time.Now().Unix()
	id := fmt.Sprintf("chatcmpl-%d", now)
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": now, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": StubReply}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "close")
	base := func(choices []any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": now, "model": model, "choices": choices}
	}
	events := []map[string]any{
		base([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": StubReply}, "finish_reason": nil}}),
		base([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}),
	}
	last := base([]any{})
	last["usage"] = usage
	events = append(events, last)
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// text flattens a message content: a string, or parts with "text".
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, " ")
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
