package opencode

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is a stand-in for an opencode-ai 1.18.33 server's HTTP API
// (the routes peerctl calls, shaped as measured): GET /global/health,
// GET /session, GET /session/status, GET /event (server.connected, then
// whatever the test pushes), POST /session/{id}/prompt_async (204, then
// message.updated echoing the id unless noEcho, then an answer unless
// noAnswer). Fields change the behaviour for bad-input tests.
type fakeServer struct {
	t   testing.TB
	srv *httptest.Server

	// conns counts the connections the server accepted.
	conns atomic.Int32

	mu       sync.Mutex
	sessions string // GET /session's body
	posts    []string
	auth     []string // Authorization headers seen
	streams  []chan string

	password                 string // "": none asked
	noEcho, noAnswer         bool
	promptStatus             int           // 0: 204
	promptBody               string        // with promptStatus
	promptHang, eventsSilent bool          // the POST never answers; /event never sends
	health                   string        // "": the real shape
	eventPrefix              string        // written first on /event (e.g. a huge line)
	echoDelay                time.Duration // before message.updated
}

func newFake(t testing.TB) *fakeServer {
	f := &fakeServer{t: t, sessions: "[]"}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			f.conns.Add(1)
		}
	}
	f.srv.Start()
	t.Cleanup(func() {
		f.mu.Lock()
		for _, s := range f.streams {
			close(s)
		}
		f.streams = nil
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// addr is "127.0.0.1:<port>".
func (f *fakeServer) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeServer) push(v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.streams {
		select {
		case s <- string(b):
		default:
		}
	}
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	pw := f.password
	f.mu.Unlock()
	if pw != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != "opencode" || p != pw {
			w.Header().Set("Www-Authenticate", `Basic realm="Secure Area"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
	}
	switch {
	case r.URL.Path == "/global/health":
		if f.health != "" {
			_, _ = io.WriteString(w, f.health)
			return
		}
		_, _ = io.WriteString(w, `{"healthy":true,"version":"1.18.33"}`)
	case r.URL.Path == "/session" && r.Method == http.MethodGet:
		f.mu.Lock()
		body := f.sessions
		f.mu.Unlock()
		_, _ = io.WriteString(w, body)
	case r.URL.Path == "/session/status":
		_, _ = io.WriteString(w, `{}`)
	case r.URL.Path == "/event":
		f.events(w, r)
	case strings.HasSuffix(r.URL.Path, "/prompt_async") && r.Method == http.MethodPost:
		f.prompt(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	if f.eventsSilent {
		fl.Flush()
		<-r.Context().Done()
		return
	}
	// Subscribed before server.connected is written, as opencode is: an
	// event after it is never missed.
	ch := make(chan string, 64)
	f.mu.Lock()
	f.streams = append(f.streams, ch)
	f.mu.Unlock()
	if f.eventPrefix != "" {
		_, _ = io.WriteString(w, f.eventPrefix)
	}
	_, _ = io.WriteString(w, "data: {\"id\":\"evt_1\",\"type\":\"server.connected\",\"properties\":{}}\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			_, _ = fmt.Fprintf(w, "data: %s\n\n", s)
			fl.Flush()
		}
	}
}

func (f *fakeServer) prompt(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.posts = append(f.posts, string(b))
	f.mu.Unlock()
	if f.promptHang {
		<-r.Context().Done()
		return
	}
	if f.promptStatus != 0 {
		w.WriteHeader(f.promptStatus)
		_, _ = io.WriteString(w, f.promptBody)
		return
	}
	var req struct {
		MessageID string `json:"messageID"`
		Parts     []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	_ = json.Unmarshal(b, &req)
	session := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/session/"), "/prompt_async")
	w.WriteHeader(http.StatusNoContent)
	go func() {
		time.Sleep(f.echoDelay)
		if f.noEcho {
			f.push(map[string]any{"type": "session.status", "properties": map[string]any{"sessionID": session, "status": map[string]string{"type": "busy"}}})
			return
		}
		f.push(map[string]any{"type": "message.updated", "properties": map[string]any{"sessionID": session,
			"info": map[string]any{"id": req.MessageID, "role": "user", "sessionID": session}}})
		if f.noAnswer {
			return
		}
		last := ""
		if len(req.Parts) > 0 {
			last = req.Parts[len(req.Parts)-1].Text
		}
		aid := "msg_ffffffffffff" + "AnswerAnswer00"
		info := map[string]any{"id": aid, "role": "assistant", "sessionID": session, "parentID": req.MessageID, "time": map[string]any{"created": 1}}
		f.push(map[string]any{"type": "message.updated", "properties": map[string]any{"sessionID": session, "info": info}})
		f.push(map[string]any{"type": "message.part.updated", "properties": map[string]any{"sessionID": session,
			"part": map[string]any{"id": "prt_1", "messageID": aid, "sessionID": session, "type": "text", "text": "pong: " + last}}})
		done := map[string]any{"id": aid, "role": "assistant", "sessionID": session, "parentID": req.MessageID, "finish": "stop",
			"time": map[string]any{"created": 1, "completed": 2}}
		f.push(map[string]any{"type": "message.updated", "properties": map[string]any{"sessionID": session, "info": done}})
	}()
}

func (f *fakeServer) postBodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.posts...)
}
