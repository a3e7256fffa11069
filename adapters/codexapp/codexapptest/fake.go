// Package codexapptest is a stand-in for Codex's app-server daemon in
// tests: a WebSocket server on a Unix socket that speaks the wire Codex
// 0.171.0 speaks (one JSON-RPC message per text frame, no "jsonrpc"
// member), laid out as Codex lays it out (a control socket link in
// <home>/app-server-control pointing into a private 0700 folder). Each
// method is answered by a Handler; a method without one gets a JSON-RPC
// error -32601.
package codexapptest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// Msg is one message the fake received.
type Msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Peer is one connection, for a Handler to answer on and notify.
type Peer struct {
	ctx context.Context
	ws  *websocket.Conn
	mu  sync.Mutex
}

// Send writes one frame as is.
func (p *Peer) Send(frame []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ws.Write(p.ctx, websocket.MessageText, frame)
}

// Notify sends a notification.
func (p *Peer) Notify(method string, params any) error {
	b, _ := json.Marshal(map[string]any{"method": method, "params": params})
	return p.Send(b)
}

// Handler answers one request: the result, or an error message (code
// -32000); (nil, "") with handled false leaves it unanswered.
type Handler func(p *Peer, m Msg) (result any, errMsg string, handled bool)

// Server is the fake daemon. Build it with Start.
type Server struct {
	// Home is the Codex home whose control socket links to the fake;
	// Dir the private folder the socket is in (pass it as the folder the
	// link may point into); Socket the socket itself.
	Home, Dir, Socket string

	mu       sync.Mutex
	handlers map[string]Handler
	got      []Msg
	srv      *http.Server
	done     chan struct{}
}

// Start serves a fake daemon until the test ends. Every method in
// handlers is answered by it; "initialize" answers by default.
func Start(t testing.TB, handlers map[string]Handler) *Server {
	t.Helper()
	s, ln := listen(t)
	s.handlers["initialize"] = func(*Peer, Msg) (any, string, bool) {
		return map[string]any{"userAgent": "fake/0.171.0", "codexHome": s.Home, "platformFamily": "unix", "platformOs": "linux"}, "", true
	}
	for k, h := range handlers {
		s.handlers[k] = h
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	t.Cleanup(s.Close)
	return s
}

// StartStopped is a daemon that takes connections and never answers, as
// a daemon stopped with SIGSTOP does: its socket listens, so the kernel
// completes a connect and takes what is written into its buffers, but
// nothing is ever accepted or read (Got stays empty).
func StartStopped(t testing.TB) *Server {
	t.Helper()
	s, ln := listen(t)
	s.srv = &http.Server{}
	t.Cleanup(func() { _ = ln.Close() })
	close(s.done)
	return s
}

// listen lays out a home, a private folder and a listening socket as
// Codex does.
func listen(t testing.TB) (*Server, net.Listener) {
	t.Helper()
	root, err := os.MkdirTemp("", "cxfake") // short: a Unix socket path holds about 100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	s := &Server{Home: filepath.Join(root, "home"), Dir: filepath.Join(root, "d"), handlers: map[string]Handler{}, done: make(chan struct{})}
	s.Socket = filepath.Join(s.Dir, "s")
	for _, d := range []string{filepath.Join(s.Home, "app-server-control"), s.Dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(s.Socket, filepath.Join(s.Home, "app-server-control", "app-server-control.sock")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	return s, ln
}

// Handle sets the handler of a method.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

// Got returns the messages received so far, in order.
func (s *Server) Got() []Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Msg(nil), s.got...)
}

// Close stops the server and its connections.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	p := &Peer{ctx: r.Context(), ws: ws}
	for {
		_, data, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var m Msg
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		s.mu.Lock()
		s.got = append(s.got, m)
		h := s.handlers[m.Method]
		s.mu.Unlock()
		if len(m.ID) == 0 {
			continue // a notification
		}
		var reply map[string]any
		if h == nil {
			reply = map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}}
		} else {
			res, msg, handled := h(p, m)
			switch {
			case !handled:
				continue
			case msg != "":
				reply = map[string]any{"id": m.ID, "error": map[string]any{"code": -32000, "message": msg}}
			default:
				reply = map[string]any{"id": m.ID, "result": res}
			}
		}
		b, _ := json.Marshal(reply)
		if p.Send(b) != nil {
			return
		}
	}
}
