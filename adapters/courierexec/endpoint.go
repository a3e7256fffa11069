package courierexec

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The courier's "model" is this loopback endpoint: it speaks the Anthropic
// Messages API the way Claude Code calls it (measured on 2.1.328 and
// 2.1.332 with ANTHROPIC_BASE_URL pointing at it: `POST /v1/messages?beta=true`,
// `stream: true`, the key in the x-api-key header; the answer is server-sent
// events message_start, content_block_start/_delta/_stop, message_delta with
// stop_reason, message_stop; see docs/CLAUDE-CODE-FACTS.md, "A courier with
// no model"). It answers a send turn with exactly one SendMessage tool_use
// built from the resolved target socket and the validated text, reads
// Claude Code's tool result from the next request, and ends every other
// turn with a fixed text. Nothing of a request's content ever goes into an
// answer, and nothing is forwarded anywhere.

// MaxRequestBytes bounds one request body. Claude Code's first request of a
// turn (system prompt and two tool descriptions) is about 40 KiB on 2.1.328;
// the conversation grows by each turn of a long-lived courier.
const MaxRequestBytes = 32 << 20

// Summary is the "summary" of every SendMessage the endpoint answers with.
const Summary = "peerctl"

// Closing is the text that ends every turn the endpoint answers without a tool.
const Closing = "Done."

// SendTool is the tool the endpoint answers a send turn with.
const SendTool = "SendMessage"

// turn is one user turn peerctl wrote to the courier's stdin: a send (to,
// text set) or a ping (doctor: a turn that sends nothing). token, a fresh
// 128-bit hex value, is the whole text of the turn: the request that
// carries it in a user message is that turn's.
type turn struct {
	token  string
	toolID string
	to     string
	text   string
	ping   bool

	emitted bool
	done    chan turnEnd // buffered 1; receives exactly once
}

// turnEnd is how a turn ended at the endpoint.
type turnEnd struct {
	result SendResult
	tools  []string // the tools the turn's request offered
	err    error    // what was seen when the exchange went wrong
}

// endpoint is the courier's loopback Messages API. Build it with
// newEndpoint; close it with close.
type endpoint struct {
	key     string
	url     string
	ln      net.Listener
	srv     *http.Server
	inbound chan Inbound

	unauthorized atomic.Int64
	requests     atomic.Int64
	dropped      atomic.Int64

	mu        sync.Mutex
	current   *turn
	seen      []string       // unexpected requests, for a failure detail
	closed    bool           // inbound is closed
	other     string         // the head of the newest user text of the last request not of a turn
	published map[string]int // inbound items published, by text (see collect)
}

// newEndpoint listens on 127.0.0.1 at a port the kernel picks, with a fresh
// 256-bit key from crypto/rand.
func newEndpoint() (*endpoint, error) {
	key, err := randomHex(32)
	if err != nil {
		return nil, fmt.Errorf("draw the endpoint key: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	e := &endpoint{key: "peerctl-" + key, url: "http://" + ln.Addr().String(), ln: ln,
		inbound: make(chan Inbound, InboundBuffer)}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// close stops the server, ends any turn still open and closes Inbound.
func (e *endpoint) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	_ = e.srv.Close()
	e.mu.Lock()
	if e.current != nil {
		e.finish(turnEnd{err: errors.New("the courier ended")})
	}
	if !e.closed {
		e.closed = true
		close(e.inbound)
	}
	e.mu.Unlock()
}

// begin makes t the turn the endpoint answers next with SendMessage.
func (e *endpoint) begin(t *turn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.current = t
}

// handedOver reports whether the endpoint has answered t with its
// SendMessage call, the text in it: from then on Claude Code may post it.
func (e *endpoint) handedOver(t *turn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return t.emitted
}

// abandon forgets t when it is still the current turn.
func (e *endpoint) abandon(t *turn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current == t {
		e.current = nil
	}
}

// finish ends the current turn with end. Called with mu held.
func (e *endpoint) finish(end turnEnd) {
	t := e.current
	e.current = nil
	t.done <- end
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.requests.Add(1)
	if !e.authorized(r) {
		e.unauthorized.Add(1)
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		_, _ = readBody(w, r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":1}`))
	case r.Method == http.MethodPost && path == "/v1/messages":
		e.messages(w, r)
	default:
		e.unexpected(fmt.Sprintf("%s %s", r.Method, path))
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not here"}}`, http.StatusNotFound)
	}
}

// authorized checks the x-api-key header (or a bearer token) against the
// run's key in constant time.
func (e *endpoint) authorized(r *http.Request) bool {
	got := r.Header.Get("X-Api-Key")
	if got == "" {
		got, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(e.key)) == 1
}

// unexpected notes a request the endpoint does not serve and, when a turn
// is open, ends it: the run cannot be trusted to be what peerctl set up.
func (e *endpoint) unexpected(what string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.seen) < 8 {
		e.seen = append(e.seen, what)
	}
	if e.current != nil {
		e.finish(turnEnd{err: fmt.Errorf("the courier made a request the endpoint does not serve: %s", what)})
	}
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxRequestBytes)
	defer body.Close()
	return io.ReadAll(body)
}

// Messages API request, only the parts the endpoint looks at.
type apiRequest struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type apiBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks returns a message content as blocks: a plain string is one text block.
func blocks(raw json.RawMessage) []apiBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []apiBlock{{Type: "text", Text: s}}
	}
	var bs []apiBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func (e *endpoint) messages(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		what := fmt.Sprintf("a request body that could not be read (%v)", err)
		code := http.StatusBadRequest
		if errors.As(err, &tooBig) {
			what, code = fmt.Sprintf("a request body over %d bytes", MaxRequestBytes), http.StatusRequestEntityTooLarge
		}
		e.unexpected(what)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, code)
		return
	}
	var req apiRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		e.unexpected(fmt.Sprintf("a request body that is not a Messages API request (%v)", err))
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	answer := e.decide(&req)
	writeAnswer(w, req.Stream, answer)
}

// answer is what the endpoint says to one request: one SendMessage call
// (tool set) or the closing text.
type answer struct {
	tool *turn
}

// decide picks the answer to one request. A request that carries the
// current turn's token and no tool_use of ours yet gets that turn's one
// SendMessage (a ping turn gets the closing text); a request that carries
// our tool_use must carry its result, which ends the turn; any other
// request is a turn the courier got on its own (a delivery notice, a
// peer's message) or a side request, published on Inbound and answered
// with the closing text.
func (e *endpoint) decide(req *apiRequest) answer {
	tools := make([]string, 0, len(req.Tools))
	for _, t := range req.Tools {
		tools = append(tools, t.Name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fresh := e.collect(req)
	t := e.current
	if t != nil && t.emitted && hasToolUse(req, t.toolID) {
		res, found := toolResult(req, t.toolID)
		if !found {
			e.finish(turnEnd{tools: tools, err: fmt.Errorf("after its SendMessage call the courier asked again without the call's result (newest user text: %q)", clip(newestUserText(req), 300))})
			return answer{}
		}
		e.finish(turnEnd{result: res, tools: tools})
		return answer{}
	}
	if t != nil && t.emitted && carries(req, t.token) {
		// The turn's request again, without our call in it (a retry?):
		// never a second call (the receiver would get the text twice).
		e.finish(turnEnd{tools: tools, err: errors.New("the courier asked again for the turn it had already been answered (a retry?); not sending twice")})
		return answer{}
	}
	if t != nil && carries(req, t.token) {
		switch {
		case t.ping:
			e.finish(turnEnd{tools: tools})
		case !contains(tools, SendTool):
			e.finish(turnEnd{tools: tools, err: fmt.Errorf("the courier was not offered %s (tools offered: %s)", SendTool, strings.Join(quoteAll(tools), ", "))})
		case hasToolUse(req, t.toolID):
			// Never a second call for one turn (FACTS: a repeat is dropped
			// by the receiver, and an endpoint that repeats loops).
			e.finish(turnEnd{tools: tools, err: errors.New("the courier asked for the same send again")})
		default:
			t.emitted = true
			return answer{tool: t}
		}
		return answer{}
	}
	text := newestUserText(req)
	e.other = clip(text, 200)
	if fresh == 0 && inboundItems(text) == nil {
		// A turn the courier got on its own that holds no notice or peer
		// message (those collect published once): published as it is
		// (InboundOther).
		e.publish(parseInbound(text))
	}
	return answer{}
}

// collect publishes every delivery notice and peer message the request's
// user and system texts hold that no earlier request held as often, and
// returns how many it published. Claude Code sends the whole conversation
// with every request and hands a message that arrives during a turn to
// that turn's next request, beside our own send turn, so "the newest user
// text" would miss some: items are counted over the whole conversation
// instead, which only grows. Called with mu held.
func (e *endpoint) collect(req *apiRequest) int {
	counts := map[string]int{}
	var order []string
	for _, m := range req.Messages {
		// A message that arrives while the courier is in a turn comes as a
		// "system" entry of the turn's next request ("Another Claude
		// session sent a message while you were working:\n<cross-session-message …>",
		// 2.1.332); one that arrives while it is idle starts a user turn.
		if m.Role != "user" && m.Role != "system" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type != "text" {
				continue
			}
			for _, item := range inboundItems(b.Text) {
				if counts[item] == 0 {
					order = append(order, item)
				}
				counts[item]++
			}
		}
	}
	if e.published == nil {
		e.published = map[string]int{}
	}
	n := 0
	for _, item := range order {
		for e.published[item] < counts[item] {
			e.published[item]++
			e.publish(parseInbound(item))
			n++
		}
	}
	return n
}

// inboundItems splits one user text into the peer messages
// (<cross-session-message …>…</cross-session-message>) and delivery
// notices ("[Cross-session delivery notice] …" up to the next item) it
// holds, in order.
func inboundItems(text string) []string {
	if !strings.Contains(text, NoticeMarker) && !strings.Contains(text, "<cross-session-message ") {
		return nil
	}
	var items []string
	rest := text
	for rest != "" {
		n := strings.Index(rest, NoticeMarker)
		m := peerMessage().FindStringIndex(rest)
		switch {
		case m != nil && (n < 0 || m[0] < n):
			items = append(items, rest[m[0]:m[1]])
			rest = rest[m[1]:]
		case n >= 0:
			end := len(rest)
			if k := strings.Index(rest[n+len(NoticeMarker):], NoticeMarker); k >= 0 {
				end = n + len(NoticeMarker) + k
			}
			if m := peerMessage().FindStringIndex(rest[n:]); m != nil && n+m[0] < end {
				end = n + m[0]
			}
			items = append(items, strings.TrimSpace(rest[n:end]))
			rest = rest[end:]
		default:
			rest = ""
		}
	}
	return items
}

// publish hands in to Inbound without blocking; when the buffer is full the
// event is counted as dropped. Called with mu held.
func (e *endpoint) publish(in Inbound) {
	if e.closed {
		return
	}
	select {
	case e.inbound <- in:
	default:
		e.dropped.Add(1)
	}
}

// carries reports whether a user message of req holds token as text.
func carries(req *apiRequest, token string) bool {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "text" && strings.Contains(b.Text, token) {
				return true
			}
		}
	}
	return false
}

func hasToolUse(req *apiRequest, id string) bool {
	for _, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_use" && b.ID == id {
				return true
			}
		}
	}
	return false
}

// toolResult finds the tool_result block for tool_use id and reads it as
// SendMessage's result (Claude Code 2.1.328/2.1.332: its content is the
// JSON text {"success":bool,"message":string,"msg_id":string}; an error
// result, is_error true, holds Claude Code's words as plain text).
func toolResult(req *apiRequest, id string) (SendResult, bool) {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type != "tool_result" || b.ToolUseID != id {
				continue
			}
			text := resultText(b.Content)
			res := SendResult{Raw: text, ToolError: b.IsError, Message: text}
			var body struct {
				Success *bool  `json:"success"`
				Message string `json:"message"`
				MsgID   string `json:"msg_id"`
				Error   string `json:"error"`
			}
			if !b.IsError && json.Unmarshal([]byte(strings.TrimSpace(text)), &body) == nil && body.Success != nil {
				res.Success, res.MsgID = *body.Success, body.MsgID
				res.Message = body.Message
				if res.Message == "" {
					res.Message = body.Error
				}
			}
			return res, true
		}
	}
	return SendResult{}, false
}

// resultText is a tool_result content as text: a string, or its text blocks joined.
func resultText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// newestUserText is the text of the last user message that has any.
func newestUserText(req *apiRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var parts []string
		for _, b := range blocks(m.Content) {
			if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// Inbound is a turn the courier got on its own, as its endpoint saw it:
// a delivery notice about a message it sent, a message from another
// session, or anything else (Kind InboundOther). The endpoint answered it
// with the closing text, no tool.
type Inbound struct {
	Kind InboundKind
	// Text is the turn's newest user text, as Claude Code gave it.
	Text string
	// MsgID is the msg_id a notice names ("" otherwise).
	MsgID string
	// Verdict is what a notice says happened: "held", "refused", or
	// "not_delivered" for any other NOT delivered notice ("" otherwise).
	Verdict string
	// From and FromName are a peer message's sender address
	// ("uds:<socket>") and display name; Body is its text between the
	// wrapper lines.
	From, FromName, Body string
	// At is when the endpoint saw it.
	At time.Time
}

// InboundKind is what an Inbound turn is.
type InboundKind int

// The kinds of Inbound turns.
const (
	InboundOther InboundKind = iota
	InboundNotice
	InboundMessage
)

func (k InboundKind) String() string {
	return [...]string{"other", "notice", "message"}[k]
}

// InboundBuffer is how many Inbound turns wait unread before more are dropped.
const InboundBuffer = 64

// NoticeMarker opens a delivery notice's text (Claude Code 2.1.332: "[Cross-session
// delivery notice] Your message to another session was held by that session
// (recipient: uds:…; msg_id: <uuid>). NOT delivered …", or "… was refused
// (recipient: …; msg_id: …): that session is not accepting cross-session messages …").
const NoticeMarker = "[Cross-session delivery notice]"

// The patterns are compiled on first use, not at package initialisation:
// every peerctl command links this package, and only a courier reads turns
// (compiling them took about a tenth of `peerctl list`'s package
// initialisation; docs/PERFORMANCE.md).
var (
	noticeMsgID = lazyRegexp(`msg_id: ([0-9A-Za-z-]+)`)
	peerOpen    = lazyRegexp(`<cross-session-message from="([^"]*)" from-name="([^"]*)"[^>]*>\n?`)
	peerMessage = lazyRegexp(`(?s)<cross-session-message from="[^"]*" from-name="[^"]*"[^>]*>.*?</cross-session-message>`)
)

// lazyRegexp is regexp.MustCompile(expr), compiled on the first call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// parseInbound classifies one inbound turn's text by what opens it first:
// a notice marker inside a peer message's body is that peer's text (Claude
// Code escapes only the wrapper tags in a body), never a notice.
func parseInbound(text string) Inbound {
	in := Inbound{Kind: InboundOther, Text: text, At: time.Now()}
	i := strings.Index(text, NoticeMarker)
	if m := peerOpen().FindStringIndex(text); m != nil && (i < 0 || m[0] < i) {
		i = -1
	}
	if i >= 0 {
		in.Kind = InboundNotice
		rest := text[i:]
		if m := noticeMsgID().FindStringSubmatch(rest); m != nil {
			in.MsgID = m[1]
		}
		switch {
		case strings.Contains(rest, " was held "):
			in.Verdict = "held"
		case strings.Contains(rest, " was refused "):
			in.Verdict = "refused"
		case strings.Contains(rest, "NOT delivered"):
			in.Verdict = "not_delivered"
		}
		return in
	}
	if m := peerOpen().FindStringSubmatchIndex(text); m != nil {
		in.Kind = InboundMessage
		in.From, in.FromName = text[m[2]:m[3]], text[m[4]:m[5]]
		body := text[m[1]:]
		if j := strings.LastIndex(body, "</cross-session-message>"); j >= 0 {
			body = strings.TrimSuffix(body[:j], "\n")
		}
		in.Body = body
	}
	return in
}

// writeAnswer writes a as a Messages API response: server-sent events when
// stream, else one JSON message. Its content is either one SendMessage
// tool_use {to, message, summary} from the turn, or the closing text.
func writeAnswer(w http.ResponseWriter, stream bool, a answer) {
	id := "msg_peerctl_" + mustHex(12)
	var block map[string]any
	stop := "end_turn"
	var input []byte
	if t := a.tool; t != nil {
		input, _ = json.Marshal(struct {
			To      string `json:"to"`
			Message string `json:"message"`
			Summary string `json:"summary"`
		}{t.to, t.text, Summary})
		block = map[string]any{"type": "tool_use", "id": t.toolID, "name": SendTool, "input": json.RawMessage(input)}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": Closing}
	}
	usage := map[string]int{"input_tokens": 0, "output_tokens": 0}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": "peerctl",
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": "peerctl", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if a.tool != nil {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": a.tool.toolID, "name": SendTool, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": Closing}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 0}})
	event("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// mustHex draws n random bytes as hex; crypto/rand.Read does not fail on
// the platforms Go supports (Go 1.24+ panics inside rather than return).
func mustHex(n int) string {
	s, err := randomHex(n)
	if err != nil {
		panic(err)
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
