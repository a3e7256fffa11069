// Command opencodefake stands in for an opencode-ai 1.18.33 `opencode
// serve` in hermetic tests: run as `opencodefake serve` (its program's
// name starts with "opencode" and its command line says serve, as
// peerctl finds opencode's servers in /proc), it listens on a free
// loopback port, writes that address as its first line on stdout, and
// answers the routes peerctl calls, shaped as measured (docs/OPENCODE.md):
// GET /global/health, GET /session (one session, $OPENCODEFAKE_SESSION
// titled $OPENCODEFAKE_TITLE, in its working folder), GET /session/status
// ({}: idle), GET /event (server.connected, then each prompt's
// message.updated) and POST /session/{id}/prompt_async (204, then
// message.updated echoing the message id). Its database is the one its
// own environment names ($XDG_DATA_HOME, $OPENCODE_DB, $HOME), as
// opencode's is; it reads none. It runs until killed.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: opencodefake serve")
		os.Exit(2)
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	now := time.Now().UnixMilli()
	s := &server{session: os.Getenv("OPENCODEFAKE_SESSION"), title: os.Getenv("OPENCODEFAKE_TITLE"), dir: cwd, created: now}
	fmt.Println(ln.Addr().String())
	fmt.Fprintln(os.Stderr, http.Serve(ln, s))
	os.Exit(1)
}

type server struct {
	session, title, dir string
	created             int64

	mu      sync.Mutex
	streams []chan []byte
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/global/health":
		_, _ = io.WriteString(w, `{"healthy":true,"version":"1.18.33"}`)
	case r.URL.Path == "/session" && r.Method == http.MethodGet:
		b, _ := json.Marshal([]map[string]any{{"id": s.session, "directory": s.dir, "title": s.title,
			"time": map[string]int64{"created": s.created, "updated": s.created}}})
		_, _ = w.Write(b)
	case r.URL.Path == "/session/status":
		_, _ = io.WriteString(w, `{}`)
	case r.URL.Path == "/event":
		s.events(w, r)
	case strings.HasSuffix(r.URL.Path, "/prompt_async") && r.Method == http.MethodPost:
		s.prompt(w, r)
	default:
		http.NotFound(w, r)
	}
}

// events is GET /event: subscribed before server.connected is written, as
// opencode is, so no event after it is missed.
func (s *server) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	ch := make(chan []byte, 64)
	s.mu.Lock()
	s.streams = append(s.streams, ch)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for i, c := range s.streams {
			if c == ch {
				s.streams = append(s.streams[:i], s.streams[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
	}()
	fl := w.(http.Flusher)
	_, _ = io.WriteString(w, "data: {\"id\":\"evt_1\",\"type\":\"server.connected\",\"properties\":{}}\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-ch:
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		}
	}
}

// prompt is POST /session/{id}/prompt_async: 204, then the user message's
// message.updated on every event stream.
func (s *server) prompt(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MessageID string `json:"messageID"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	session := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/session/"), "/prompt_async")
	if session != s.session {
		http.NotFound(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	b, _ := json.Marshal(map[string]any{"type": "message.updated", "properties": map[string]any{"sessionID": session,
		"info": map[string]any{"id": req.MessageID, "role": "user", "sessionID": session}}})
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.streams {
		select {
		case c <- b:
		default:
		}
	}
}
