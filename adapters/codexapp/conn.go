package codexapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/coder/websocket"
)

// MaxFrame bounds one message read from the daemon (bytes): a longer frame
// ends the connection with an error, so a daemon cannot make peerctl hold
// more than this at once.
const MaxFrame = 4 << 20

// notifyBuffer bounds the notifications held for a reader (Notifications):
// beyond it, the oldest is dropped.
const notifyBuffer = 1024

// ClientName is the clientInfo.name peerctl gives the daemon.
const ClientName = "peerctl"

// Notification is one message the daemon sent without an id (or a
// request of its own, which peerctl does not answer: ID is set).
type Notification struct {
	Method string
	Params json.RawMessage
	// ID is set when the daemon asked something (a server request, e.g.
	// an approval); peerctl leaves those to the person's client.
	ID json.RawMessage
}

// RPCError is an error the daemon answered a call with.
type RPCError struct {
	Method  string
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("Codex answered %s with error %d: %s", e.Method, e.Code, e.Message)
}

// NoAnswerError says that the daemon at Socket took the connection (a
// stopped or hung process's socket still does: the kernel accepts) but
// did not answer Step (the WebSocket upgrade, or a method) before the
// caller's deadline. It matches context.DeadlineExceeded (errors.Is).
type NoAnswerError struct {
	Socket string
	// Step is "the WebSocket upgrade" or a method ("initialize", …).
	Step string
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("Codex's app-server at %s took the connection but did not answer %s in time", e.Socket, e.Step)
}

// Is makes a NoAnswerError match context.DeadlineExceeded.
func (e *NoAnswerError) Is(target error) bool { return target == context.DeadlineExceeded }

// Conn is one connection to the daemon. Calls may run concurrently; every
// one is bounded by its context. Close ends the reader and releases
// everything.
type Conn struct {
	socket  string
	ws      *websocket.Conn
	next    atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan frame
	notes   chan Notification
	dropped atomic.Int64
	done    chan struct{}
	err     error // why the reader ended; read after done
	stop    context.CancelFunc
	once    sync.Once
}

// frame is one JSON-RPC message as read (no "jsonrpc" member).
type frame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// Dial connects to the daemon's socket (a path Socket checked) and
// upgrades the connection to a WebSocket; ctx bounds the handshake only.
// It does not initialize (see Open). A handshake that ctx's deadline cut
// short is a *NoAnswerError; a socket nothing listens on wraps
// syscall.ECONNREFUSED; the errors name the socket and the cause only (not
// the WebSocket library's layers).
func Dial(ctx context.Context, socket string) (*Conn, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
	ws, resp, err := websocket.Dial(ctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: hc})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, dialError(ctx, socket, err)
	}
	ws.SetReadLimit(MaxFrame)
	rctx, stop := context.WithCancel(context.Background())
	c := &Conn{socket: socket, ws: ws, pending: map[int64]chan frame{}, notes: make(chan Notification, notifyBuffer),
		done: make(chan struct{}), stop: stop}
	go c.read(rctx)
	return c, nil
}

// Open is Dial and the handshake: initialize (clientInfo peerctl, the
// version given) and the initialized notification. On error nothing is
// left open.
func Open(ctx context.Context, socket, version string) (*Conn, error) {
	c, err := Dial(ctx, socket)
	if err != nil {
		return nil, err
	}
	if err := c.initialize(ctx, version); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// dialError says why Dial failed: no answer before ctx's deadline
// (*NoAnswerError), the system's own error of the connect (refused, no
// such file, permission), else err as the WebSocket library put it.
func dialError(ctx context.Context, socket string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &NoAnswerError{Socket: socket, Step: "the WebSocket upgrade"}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("connect to Codex's app-server at %s: %w", socket, errno)
	}
	return fmt.Errorf("connect to Codex's app-server at %s: %w", socket, err)
}

func (c *Conn) initialize(ctx context.Context, version string) error {
	if version == "" {
		version = "dev"
	}
	params := map[string]any{"clientInfo": map[string]string{"name": ClientName, "title": "peerctl", "version": version}}
	if err := c.Call(ctx, "initialize", params, nil); err != nil {
		return err
	}
	return c.Notify(ctx, "initialized", nil)
}

func (c *Conn) read(ctx context.Context) {
	defer close(c.done)
	defer close(c.notes)
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			c.err = fmt.Errorf("read from Codex's app-server: %w", err)
			c.failPending()
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.err = fmt.Errorf("read from Codex's app-server: a frame is not a JSON-RPC message (%d bytes): %w", len(data), err)
			c.failPending()
			_ = c.ws.Close(websocket.StatusUnsupportedData, "not JSON")
			return
		}
		if f.Method != "" {
			c.deliver(Notification{Method: f.Method, Params: f.Params, ID: f.ID})
			continue
		}
		var id int64
		if json.Unmarshal(f.ID, &id) != nil {
			continue // a response to no call of ours
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
}

// deliver queues n for Notifications; when the buffer is full the oldest
// is dropped (counted in Dropped), so a reader that stops reading never
// stalls the calls.
func (c *Conn) deliver(n Notification) {
	for {
		select {
		case c.notes <- n:
			return
		default:
		}
		select {
		case <-c.notes:
			c.dropped.Add(1)
		default:
		}
	}
}

func (c *Conn) failPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.pending = nil
}

// Notifications delivers the daemon's notifications in arrival order; it
// is closed when the connection ends.
func (c *Conn) Notifications() <-chan Notification { return c.notes }

// Dropped counts notifications dropped because no one read them.
func (c *Conn) Dropped() int64 { return c.dropped.Load() }

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it runs).
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Call sends a request and decodes its result into out (nil: ignored). An
// error answer is a *RPCError; a connection that ends first, or ctx, is
// an error naming the method.
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	id := c.next.Add(1)
	ch := make(chan frame, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, c.ended())
	}
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.pending != nil {
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}
	if err := c.write(ctx, map[string]any{"id": id, "method": method, "params": orEmpty(params)}); err != nil {
		forget()
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w", method, c.ended())
		}
		if f.Error != nil {
			f.Error.Method = method
			return f.Error
		}
		if out != nil {
			if err := json.Unmarshal(f.Result, out); err != nil {
				return fmt.Errorf("%s: Codex's answer does not read: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		forget()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &NoAnswerError{Socket: c.socket, Step: method}
		}
		return fmt.Errorf("%s: no answer from Codex's app-server: %w", method, ctx.Err())
	}
}

// Notify sends a notification (no answer).
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := c.write(ctx, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

func (c *Conn) write(ctx context.Context, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

func (c *Conn) ended() error {
	select {
	case <-c.done:
		if c.err != nil {
			return c.err
		}
	default:
	}
	return errors.New("the connection to Codex's app-server has ended")
}

// Close ends the connection and waits for its reader; safe to call more
// than once.
func (c *Conn) Close() error {
	c.once.Do(func() {
		_ = c.ws.CloseNow()
		c.stop()
	})
	<-c.done
	return nil
}

func orEmpty(params any) any {
	if params == nil {
		return map[string]any{}
	}
	return params
}
