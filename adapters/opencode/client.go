package opencode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
)

// Bounds of what an opencode server's answers may hold (bytes), and of
// the sessions read from one server.
const (
	maxHealthBody  = 64 << 10
	maxSessionBody = 32 << 20
	maxErrorBody   = 64 << 10
	maxSessions    = 10000
	// maxEventLine bounds one line of the event stream; a longer one
	// ends the stream with ErrEventTooLong (a part's whole text is in one
	// event, so the bound is generous).
	maxEventLine = 16 << 20
)

// ErrNotOpencode is wrapped when a port answers but not as opencode's
// server does (GET /global/health gave no {"healthy":true,"version":…}).
var ErrNotOpencode = errors.New("not an opencode server")

// ErrUnauthorized is wrapped when the server asks for a password (401
// with www-authenticate Basic: OPENCODE_SERVER_PASSWORD is set there) and
// none, or another, was given.
var ErrUnauthorized = errors.New("the opencode server asks for a password")

// PasswordError is a 401 from a server that asks for a password
// (OPENCODE_SERVER_PASSWORD set there): none was given (Given false), or
// the one given was refused. It wraps ErrUnauthorized and never holds the
// password.
type PasswordError struct {
	// Addr is the server's address.
	Addr  string
	Given bool
	User  string
}

func (e *PasswordError) Error() string {
	if e.Given {
		user := ""
		if e.User != "" {
			user = fmt.Sprintf(", user %q", e.User)
		}
		return fmt.Sprintf("the opencode server at %s refused peerctl's password (%s%s): give peerctl the server's %s (and %s)", e.Addr, PasswordEnv, user, PasswordEnv, UserEnv)
	}
	return fmt.Sprintf("the opencode server at %s asks for a password and peerctl has none: set %s (and %s if not \"opencode\") for peerctl to the server's", e.Addr, PasswordEnv, UserEnv)
}

func (e *PasswordError) Unwrap() error { return ErrUnauthorized }

// ErrEventTooLong ends an event stream whose line exceeds maxEventLine.
var ErrEventTooLong = errors.New("event stream line too long")

// Auth is HTTP Basic auth for a password-protected server
// (OPENCODE_SERVER_PASSWORD, user OPENCODE_SERVER_USERNAME, default
// "opencode"; opencode-ai 1.18.33). The zero value sends none. Its String
// never shows the password.
type Auth struct{ user, password string }

// NewAuth is Auth for user ("" is "opencode") and password ("": none).
func NewAuth(user, password string) Auth {
	if user == "" {
		user = "opencode"
	}
	return Auth{user: user, password: password}
}

// Set reports whether a password is given.
func (a Auth) Set() bool { return a.password != "" }

// String is "basic auth as <user>" or "no auth", never the password.
func (a Auth) String() string {
	if !a.Set() {
		return "no auth"
	}
	return "basic auth as " + a.user
}

// Client speaks opencode's HTTP API (opencode-ai 1.18.33, its OpenAPI
// document at GET /doc) to one server process on loopback, at the address
// it bound (DialAddr: "127.0.0.2:<port>", "[::1]:<port>"). Every
// connection proves whose it is before a byte is written: its server-side
// socket is among the server process's open files (sockowner); one that
// is not is closed unwritten, and the call's error is a
// *sockowner.Mismatch (or wraps sockowner.ErrUnproven), so no password
// and no text reaches another listener. Every answer is read up to a
// bound; no call writes opencode's state but PromptAsync, which posts a
// message.
type Client struct {
	addr string
	base string
	auth Auth
	http *http.Client
	// dial dials and proves one connection (prover.Dialer).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu sync.Mutex
	// spare is Warm's connection being dialled and proved (nil in it when
	// that failed); nil when no Warm waits to be taken.
	spare chan net.Conn
}

// NewClient is a Client for the server process pid listening at addr (a
// loopback "host:port"), its connections proved pid's under /proc (prover
// zero) or prover's root. Proxies are never used (loopback only).
func NewClient(addr string, pid int, auth Auth, prover sockowner.Prover) *Client {
	c := &Client{addr: addr, base: "http://" + addr, auth: auth, dial: prover.Dialer(pid, &net.Dialer{Timeout: 2 * time.Second})}
	tr := &http.Transport{Proxy: nil, DialContext: c.dialContext,
		ResponseHeaderTimeout: 0, MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second}
	c.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c
}

// Warm starts dialling and proving one connection to the server in the
// background, for the next request that needs a new connection (when
// none of the client's is idle) to take instead of dialling after it is
// asked: a send warms the connection of its post while its event stream
// waits for its first event. The connection is proved as every other
// (nothing is written before); one that fails to prove is dropped and the
// request dials its own. A second Warm before the first is taken does
// nothing; Close closes a spare never taken.
func (c *Client) Warm(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spare != nil {
		return
	}
	ch := make(chan net.Conn, 1)
	c.spare = ch
	go func() {
		conn, err := c.dial(ctx, "tcp", c.addr)
		if err != nil {
			conn = nil
		}
		ch <- conn
	}()
}

// dialContext is the transport's dial: Warm's spare connection when one
// was started (waiting for it to be proved), else a new one, proved.
func (c *Client) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	ch := c.spare
	if addr == c.addr {
		c.spare = nil
	} else {
		ch = nil
	}
	c.mu.Unlock()
	if ch != nil {
		select {
		case conn := <-ch:
			if conn != nil {
				return conn, nil
			}
		case <-ctx.Done():
			go closeSpare(ch)
			return nil, ctx.Err()
		}
	}
	return c.dial(ctx, network, addr)
}

// closeSpare closes the connection a Warm gives on ch, once it is given.
func closeSpare(ch <-chan net.Conn) {
	if conn := <-ch; conn != nil {
		conn.Close()
	}
}

// Close releases the client's idle connections and a spare never taken.
func (c *Client) Close() {
	c.mu.Lock()
	ch := c.spare
	c.spare = nil
	c.mu.Unlock()
	if ch != nil {
		go closeSpare(ch)
	}
	c.http.CloseIdleConnections()
}

func (c *Client) request(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth.Set() {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.auth.user+":"+c.auth.password)))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, scrub(err))
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", method, path, &PasswordError{Addr: c.addr, Given: c.auth.Set(), User: c.auth.user})
	}
	return resp, nil
}

// scrub keeps an error from a request but drops a URL's user info (none
// is ever put there; belt and braces for what the net stack quotes).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readBody reads at most limit bytes; more is an error naming the bound.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("answer larger than %d bytes", limit)
	}
	return b, nil
}

// Health is GET /global/health: {"healthy":true,"version":"1.18.33"}.
// It returns the version; an answer of another shape wraps
// ErrNotOpencode, a 401 ErrUnauthorized.
func (c *Client) Health(ctx context.Context) (string, error) {
	resp, err := c.request(ctx, http.MethodGet, "/global/health", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := readBody(resp.Body, maxHealthBody)
	if err != nil {
		return "", fmt.Errorf("GET /global/health: %w: %w", ErrNotOpencode, err)
	}
	var h struct {
		Healthy *bool  `json:"healthy"`
		Version string `json:"version"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &h) != nil || h.Healthy == nil || h.Version == "" {
		return "", fmt.Errorf("GET /global/health: %w (%s: %s)", ErrNotOpencode, resp.Status, quote(b))
	}
	if !*h.Healthy {
		return h.Version, fmt.Errorf("GET /global/health: opencode %s says it is not healthy", h.Version)
	}
	return h.Version, nil
}

// SessionInfo is one session of GET /session (opencode-ai 1.18.33):
// times are epoch milliseconds.
type SessionInfo struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	ProjectID string `json:"projectID"`
	Directory string `json:"directory"`
	ParentID  string `json:"parentID"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Time      struct {
		Created  int64 `json:"created"`
		Updated  int64 `json:"updated"`
		Archived int64 `json:"archived"`
	} `json:"time"`
}

// Sessions is GET /session?directory=<dir>&roots=true: the root sessions
// (no parent: not a subagent's) of dir's project, as opencode's database
// holds them, at most maxSessions. A record that is not an object with an
// id is skipped; skipped says how many and why.
func (c *Client) Sessions(ctx context.Context, dir string) (out []SessionInfo, skipped []string, err error) {
	q := url.Values{"directory": {dir}, "roots": {"true"}, "limit": {strconv.Itoa(maxSessions)}}
	resp, err := c.request(ctx, http.MethodGet, "/session?"+q.Encode(), nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := readBody(resp.Body, maxErrorBody)
		return nil, nil, fmt.Errorf("GET /session: %s: %s", resp.Status, quote(b))
	}
	b, err := readBody(resp.Body, maxSessionBody)
	if err != nil {
		return nil, nil, fmt.Errorf("GET /session: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("GET /session: not a JSON list: %w", err)
	}
	for i, r := range raw {
		if len(out) >= maxSessions {
			skipped = append(skipped, fmt.Sprintf("%d sessions past the first %d", len(raw)-i, maxSessions))
			break
		}
		var s SessionInfo
		if err := json.Unmarshal(r, &s); err != nil || !ValidSessionID(s.ID) {
			skipped = append(skipped, fmt.Sprintf("session %d of GET /session: not a session with an id ses_… (%s)", i, quote(r)))
			continue
		}
		out = append(out, s)
	}
	return out, skipped, nil
}

// Busy is GET /session/status: the ids of the sessions running now
// ({"<id>":{"type":"busy"|"retry",…}}, {} when idle).
func (c *Client) Busy(ctx context.Context) (map[string]bool, error) {
	resp, err := c.request(ctx, http.MethodGet, "/session/status", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp.Body, maxHealthBody)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /session/status: %s %v", resp.Status, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("GET /session/status: %w", err)
	}
	out := make(map[string]bool, len(m))
	for id := range m {
		out[id] = true
	}
	return out, nil
}

// HTTPError is an answer other than the one a call expects: opencode's
// status and its words (its body, bounded).
type HTTPError struct {
	Status string
	Body   string
}

func (e *HTTPError) Error() string { return e.Status + ": " + e.Body }

// PromptAsync is POST /session/{id}/prompt_async with
// {"messageID":msgID,"parts":[{"type":"text","text":…},…]} (opencode-ai
// 1.18.33): 204 means opencode took it as the session's next user turn. Any
// other answer is an *HTTPError quoting opencode.
func (c *Client) PromptAsync(ctx context.Context, session, msgID string, texts ...string) error {
	parts := make([]map[string]string, len(texts))
	for i, t := range texts {
		parts[i] = map[string]string{"type": "text", "text": t}
	}
	body, err := json.Marshal(map[string]any{"messageID": msgID, "parts": parts})
	if err != nil {
		return err
	}
	resp, err := c.request(ctx, http.MethodPost, "/session/"+url.PathEscape(session)+"/prompt_async", body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := readBody(resp.Body, maxErrorBody)
	if resp.StatusCode/100 != 2 {
		return &HTTPError{Status: resp.Status, Body: quote(b)}
	}
	return nil
}

// PromptBody is PromptAsync's request body, for a plan.
func PromptBody(msgID string, texts ...string) string {
	parts := make([]map[string]string, len(texts))
	for i, t := range texts {
		parts[i] = map[string]string{"type": "text", "text": t}
	}
	b, _ := json.Marshal(map[string]any{"messageID": msgID, "parts": parts})
	return string(b)
}

// Event is one event of GET /event (opencode-ai 1.18.33): a server-sent
// event line `data: {"id":"evt_…","type":"…","properties":{…}}`.
type Event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// Events opens GET /event and returns its events on a channel, closed
// when the stream ends (ctx, the server, or a line over maxEventLine);
// errc then holds why (nil on ctx's end). It returns once the server
// answered 200 and sent its first event (server.connected), so that
// nothing posted afterwards is missed; connected bounds that wait. A
// line that is not JSON is skipped.
func (c *Client) Events(ctx context.Context, connected time.Duration) (<-chan Event, <-chan error, error) {
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.request(ctx, http.MethodGet, "/event", nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := readBody(resp.Body, maxErrorBody)
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("GET /event: %w (%s %s: %s)", ErrNotOpencode, resp.Status, resp.Header.Get("Content-Type"), quote(b))
	}
	events, errc := make(chan Event, 256), make(chan error, 1)
	first := make(chan error, 1) // nil on the first event; why, when the stream ended before one
	go func() {
		defer cancel()
		defer resp.Body.Close()
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), maxEventLine)
		once := false
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var ev Event
			if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil || ev.Type == "" {
				continue
			}
			if !once {
				once = true
				first <- nil
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				errc <- nil
				return
			}
		}
		var why error
		switch err := sc.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			why = ErrEventTooLong
		case ctx.Err() != nil:
		case err != nil:
			why = err
		default:
			why = errors.New("the server ended the event stream")
		}
		errc <- why
		if !once {
			if why == nil {
				why = ctx.Err()
			}
			first <- why
		}
	}()
	timer := time.NewTimer(connected)
	defer timer.Stop()
	select {
	case err := <-first:
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("GET /event: the stream ended before its first event: %w", err)
		}
		return events, errc, nil
	case <-timer.C:
		cancel()
		return nil, nil, fmt.Errorf("GET /event: no event within %s", connected)
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("GET /event: no event before the deadline: %w", ctx.Err())
	}
}

// quote is a body as it may be shown: one line, at most 300 bytes.
func quote(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
