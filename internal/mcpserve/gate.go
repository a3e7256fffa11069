package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/lines"
)

// maxDepth is how deeply a message may nest: the SDK's own decoder refuses
// deeper JSON (go-sdk v1.8.0, internal/json), and a refusal there ends the
// session.
const maxDepth = 1000

// JSON-RPC 2.0's error codes for a message that is not a request
// (https://www.jsonrpc.org/specification, "Error object").
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
)

// gate is the stdio transport in front of the SDK's: it reads stdin line
// by line (MCP's stdio framing, specification 2025-06-18) and hands the SDK
// only messages it will serve, written anew from what was read with exact
// keys; it answers everything else itself and keeps serving. The SDK ends
// the session on the first line it cannot use (not JSON, not a JSON-RPC 2.0
// message, an id that is not a string or integer, a batch after 2025-03-26,
// a line of 16 MiB), and every call still running then goes unanswered.
//
//   - a line that is not JSON, or not UTF-8: -32700 Parse error, id null;
//   - a line over lines.MaxRequest bytes, a batch (MCP 2025-06-18 has none),
//     a value that is not a request, notification or response, a key given
//     twice anywhere in it, JSON nested over maxDepth, an id already in use:
//     -32600 Invalid Request, with the line's id when it has a usable one
//     (a string, a number, null), else id null;
//   - a malformed response (the client's answer to a request of the
//     server's): skipped with a note, as a server never answers a response.
//
// Every call's id is replaced by one of the gate's own on the way in and
// put back, as written, on the way out: the SDK keeps only strings and
// integers (1.5 became 1). A call the client cancels (notifications/
// cancelled) has its context cancelled by the SDK, and the gate drops its
// answer (MCP 2025-06-18, "Cancellation": the receiver SHOULD NOT respond).
type gate struct {
	lr   *lines.Reader
	note io.Writer
	buf  []byte // the rest of the message being passed to the SDK

	wmu sync.Mutex // one writer of out at a time
	out io.Writer

	mu    sync.Mutex
	seq   uint64
	calls map[string]*call // by the gate's id
	byID  map[string]string
	idle  chan struct{} // closed when no call is left to answer (while Read waits at the end of stdin)

	stop <-chan struct{} // ends the wait for the calls in flight at the end of stdin (nil: none)
}

// call is one call in flight: the client's id as written.
type call struct {
	id        json.RawMessage
	key       string // id, compacted: how a cancellation names it
	cancelled bool
}

// message is one JSON-RPC 2.0 message, each member as written.
type message struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  json.RawMessage `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func newGate(in io.Reader, out, note io.Writer) *gate {
	return &gate{lr: lines.NewReader(in, lines.MaxRequest), out: out, note: note,
		calls: map[string]*call{}, byID: map[string]string{}}
}

// Read passes the SDK the messages it will serve, one line each.
func (g *gate) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		line, long, err := g.lr.Next()
		if err != nil {
			g.drain()
			return 0, err
		}
		if long {
			g.refuse(nil, codeInvalidRequest, fmt.Sprintf("line %d is over %d bytes", g.lr.N(), lines.MaxRequest))
			continue
		}
		g.buf = g.admit(bytes.TrimSpace(line))
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// drain waits, at the end of stdin, until every call read is answered
// (a cancelled one is not waited for) or stop closes: the SDK cancels the
// calls still running once Read ends, and a client that writes its
// requests and closes stdin at once got no answer at all.
func (g *gate) drain() {
	g.mu.Lock()
	if g.live() == 0 {
		g.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	g.idle = idle
	g.mu.Unlock()
	select {
	case <-idle:
	case <-g.stop:
	}
}

// live is how many calls are waiting for an answer that will be written;
// g.mu is held. When none is and Read waits for that, it is told.
func (g *gate) live() int {
	n := 0
	for _, c := range g.calls {
		if !c.cancelled {
			n++
		}
	}
	if n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	return n
}

// admit returns the line as the SDK is to read it (with its "\n"), or nil
// when the gate answered or skipped it.
func (g *gate) admit(line []byte) []byte {
	if len(line) == 0 {
		return nil
	}
	n := g.lr.N()
	if !utf8.Valid(line) || !json.Valid(line) {
		g.refuse(nil, codeParse, fmt.Sprintf("line %d is not JSON", n))
		return nil
	}
	if line[0] == '[' {
		g.refuse(nil, codeInvalidRequest, fmt.Sprintf("line %d is a batch (an array): MCP's stdio carries one message per line", n))
		return nil
	}
	var m message
	err := jsonexact.Options{NoDuplicates: true}.Unmarshal(line, &m)
	var ke *jsonexact.KeyError
	switch {
	case errors.As(err, &ke) && ke.Key == "id":
		g.refuse(nil, codeInvalidRequest, fmt.Sprintf("line %d gives \"id\" twice", n))
		return nil
	case errors.As(err, &ke):
		_ = jsonexact.Unmarshal(line, &m) // for its id
		g.refuse(usableID(m.ID), codeInvalidRequest, fmt.Sprintf("line %d: %v", n, err))
		return nil
	case err != nil:
		g.refuse(nil, codeInvalidRequest, fmt.Sprintf("line %d is %v", n, err))
		return nil
	}
	id := usableID(m.ID)
	if dup, ok := jsonexact.Duplicate(line); ok {
		g.refuse(id, codeInvalidRequest, fmt.Sprintf("line %d gives the key %q twice in one object", n, dup))
		return nil
	}
	if jsonexact.Depth(line) > maxDepth {
		g.refuse(id, codeInvalidRequest, fmt.Sprintf("line %d nests deeper than %d", n, maxDepth))
		return nil
	}
	var version string
	if json.Unmarshal(m.JSONRPC, &version) != nil || version != "2.0" {
		g.refuse(id, codeInvalidRequest, fmt.Sprintf(`line %d: want "jsonrpc":"2.0"`, n))
		return nil
	}
	if m.ID != nil && id == nil {
		g.refuse(nil, codeInvalidRequest, fmt.Sprintf("line %d: an id is a string, a number or null", n))
		return nil
	}
	if m.Method == nil {
		return g.response(m, n)
	}
	var method string
	if json.Unmarshal(m.Method, &method) != nil {
		g.refuse(id, codeInvalidRequest, fmt.Sprintf(`line %d: "method" is a string`, n))
		return nil
	}
	if m.Params != nil && !bytes.HasPrefix(m.Params, []byte("{")) && !bytes.HasPrefix(m.Params, []byte("[")) {
		g.refuse(id, codeInvalidRequest, fmt.Sprintf(`line %d: "params" is an object or an array`, n))
		return nil
	}
	out := message{JSONRPC: m.JSONRPC, Method: m.Method, Params: m.Params}
	switch {
	case m.ID != nil:
		if out.ID = g.enter(id); out.ID == nil {
			g.refuse(id, codeInvalidRequest, fmt.Sprintf("line %d: id %s is already in use by a call in flight", n, id))
			return nil
		}
	case method == "notifications/cancelled":
		if out.Params = g.cancel(m.Params); out.Params == nil {
			return nil // not a call in flight (any more): nothing to cancel
		}
	}
	return marshalLine(out)
}

// response passes on a client's response to a request of the server's:
// the SDK takes an id that is a string or integer and an error object of
// the right shape, else it ends the session.
func (g *gate) response(m message, n int) []byte {
	var e *struct {
		Code    *int64  `json:"code"`
		Message *string `json:"message"`
	}
	var idText string
	var idInt int64
	switch {
	case m.ID == nil && m.Result == nil && m.Error == nil:
		g.refuse(nil, codeInvalidRequest, fmt.Sprintf(`line %d has no "method"`, n))
		return nil
	case m.ID == nil,
		json.Unmarshal(m.ID, &idText) != nil && json.Unmarshal(m.ID, &idInt) != nil,
		(m.Result == nil) == (m.Error == nil),
		m.Error != nil && (json.Unmarshal(m.Error, &e) != nil || e == nil || e.Code == nil || e.Message == nil):
		fmt.Fprintf(g.note, "peerctl: mcp: line %d is not a JSON-RPC response the server can read; skipped\n", n)
		return nil
	}
	return marshalLine(message{JSONRPC: m.JSONRPC, ID: m.ID, Result: m.Result, Error: m.Error})
}

// usableID is raw when it is an id the gate can answer with (a string, a
// number, null), else nil.
func usableID(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw
	}
	return nil
}

// enter records a call with the client's id and returns the gate's id
// for it (a JSON string), or nil when a call with that id is in flight.
func (g *gate) enter(id json.RawMessage) json.RawMessage {
	key := compact(id)
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, busy := g.byID[key]; busy {
		return nil
	}
	g.seq++
	own := strconv.Quote("peerctl-" + strconv.FormatUint(g.seq, 10))
	g.calls[own] = &call{id: id, key: key}
	g.byID[key] = own
	return json.RawMessage(own)
}

// cancel rewrites a notifications/cancelled's params to name the gate's
// id of the call, and marks the call's answer to be dropped; nil when no
// call in flight has that id.
func (g *gate) cancel(params json.RawMessage) json.RawMessage {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    json.RawMessage `json:"reason,omitempty"`
		Meta      json.RawMessage `json:"_meta,omitempty"`
	}
	if params == nil || jsonexact.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return nil
	}
	g.mu.Lock()
	own, ok := g.byID[compact(p.RequestID)]
	if ok {
		g.calls[own].cancelled = true
		g.live()
	}
	g.mu.Unlock()
	if !ok {
		return nil
	}
	p.RequestID = json.RawMessage(own)
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return b
}

// Write writes one message of the SDK's (one line): an answer to a call
// with the call's id as the client wrote it, none to a cancelled call.
func (g *gate) Write(p []byte) (int, error) {
	var m message
	if jsonexact.Unmarshal(p, &m) == nil && m.Method == nil && m.ID != nil {
		g.mu.Lock()
		c, ok := g.calls[string(m.ID)]
		if ok {
			delete(g.calls, string(m.ID))
			if g.byID[c.key] == string(m.ID) {
				delete(g.byID, c.key)
			}
		}
		g.mu.Unlock()
		defer g.settle()
		switch {
		case ok && c.cancelled:
			return len(p), nil
		case ok:
			m.ID = c.id
			if err := g.writeLine(marshalLine(m)); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	g.wmu.Lock()
	defer g.wmu.Unlock()
	return g.out.Write(p)
}

// settle tells a Read waiting at the end of stdin when the last answer is
// out (called after it is written, so it is out before the SDK ends).
func (g *gate) settle() {
	g.mu.Lock()
	g.live()
	g.mu.Unlock()
}

// refuse answers a line with a JSON-RPC error (id null when id is nil)
// and notes it on stderr.
func (g *gate) refuse(id json.RawMessage, code int, detail string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	word := "Invalid Request"
	if code == codeParse {
		word = "Parse error"
	}
	fmt.Fprintf(g.note, "peerctl: mcp: %s: %s; answered with error %d\n", word, detail, code)
	type errObj struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(errObj{Code: code, Message: word + ": " + detail})
	// A reader that went away ends the session on the SDK's next write.
	_ = g.writeLine(marshalLine(message{JSONRPC: json.RawMessage(`"2.0"`), ID: id, Error: b}))
}

func (g *gate) writeLine(b []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	_, err := g.out.Write(b)
	return err
}

// marshalLine is m as one line.
func marshalLine(m message) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m) // raw members are valid JSON: cannot fail
	return buf.Bytes()
}

// compact is the JSON text data without insignificant space: how two
// spellings of one id compare.
func compact(data []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, data) != nil {
		return string(data)
	}
	return b.String()
}
