// Package dashboard is peerctl serve --http's page: the live sessions of
// every machine, the outbox with each message's receipts, a send form and
// the hosts, as one http.Handler over a Backend, pushed to the browser as
// server-sent events. Every request must carry the run's token (first in
// the URL, then in a cookie), name the bound address as its Host, and,
// when it changes anything, come from the page's own origin.
package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/ports/wire"
)

//go:embed assets
var assets embed.FS

// Backend is what the page shows and does; peerctl serve gives the real
// use cases, tests give fakes. Every method is called with a deadline.
type Backend interface {
	// Hosts names the machines whose sessions the page shows, this one
	// ("") first, then each host's DEST.
	Hosts(ctx context.Context) []string
	// Sessions lists every record (live or not) of one machine of Hosts.
	// Each machine is listed on its own: one that is slow or hangs holds
	// up no other.
	Sessions(ctx context.Context, host string) HostListing
	// Messages lists the outbox messages q selects, newest first, at most
	// q.Limit of them with an ID; on the first page (q.Before 0) the plain
	// sends the service carried (ID 0) come beside them. An error: the
	// outbox cannot be read.
	Messages(ctx context.Context, q MessageQuery) ([]Message, error)
	// Count is how many outbox messages (with an ID) are in q's state on
	// every page, q.Before and q.Limit aside: the M of the page's "the
	// newest N of M". An error: the outbox cannot be read.
	Count(ctx context.Context, q MessageQuery) (int, error)
	// Cancel and Retry are `peerctl outbox cancel|retry --json ID`.
	// confirmed says the user confirmed sending an outcome_unknown message
	// again; without it Retry refuses such a message (the refusal
	// outcome_unknown, exit 13) and changes nothing: the use case decides,
	// on the message as it is then.
	Cancel(ctx context.Context, id int64) Result
	Retry(ctx context.Context, id int64, confirmed bool) Result
	// Approve and Deny are `peerctl outbox approve|deny --json ID` of a
	// message the trust policy holds (awaiting_approval), by the page's
	// user: approved, it is delivered as a durable message; denied, it
	// ends and is never sent.
	Approve(ctx context.Context, id int64) Result
	Deny(ctx context.Context, id int64) Result
	// Send is `peerctl send --json ADDRESS TEXT`, with --await-reply
	// (await > 0) waiting that long for the answer.
	Send(ctx context.Context, address, text string, await time.Duration) Result
	// Fleet is every node's live sessions on the fleet's bus, as list
	// --fleet gives them, from the service's live view (in memory: no
	// deadline); ok is false when it has none (no bus).
	Fleet() (l wire.Listing, ok bool)
}

// MessageQuery selects one page of the outbox.
type MessageQuery struct {
	// State keeps the messages in this state (a word of `outbox
	// --state`; "": every state).
	State string
	// Before keeps the messages older than message Before (IDs below it;
	// 0: from the newest). The next page starts before the oldest ID of
	// the page shown.
	Before int64
	// Limit is the most messages with an ID (the outbox's) it returns.
	Limit int
}

// Total is how many messages of msgs with an ID are in q's state
// (Count over msgs, as Select selects them).
func (q MessageQuery) Total(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.ID != 0 && (q.State == "" || m.State == q.State) {
			n++
		}
	}
	return n
}

// Select is the messages of msgs (newest first) q selects: those in q's
// state, older than q.Before (a plain send, ID 0, on the first page
// only), at most q.Limit of them with an ID (0: no limit).
func (q MessageQuery) Select(msgs []Message) []Message {
	var out []Message
	n := 0
	for _, m := range msgs {
		if q.State != "" && m.State != q.State || q.Before != 0 && (m.ID == 0 || m.ID >= q.Before) {
			continue
		}
		if m.ID != 0 {
			if q.Limit > 0 && n == q.Limit {
				continue
			}
			n++
		}
		out = append(out, m)
	}
	return out
}

// Result is what a command gave: its exit code, the JSON it printed on
// stdout (a receipt, a message, a refusal; null when none) and its stderr.
type Result struct {
	Code   int             `json:"code"`
	JSON   json.RawMessage `json:"json"`
	Stderr string          `json:"stderr,omitempty"`
}

// Options are the dashboard's settings.
type Options struct {
	// Addr is the bound address, host:port, exactly as the printed URL has
	// it: requests must name it as their Host.
	Addr string
	// Token is the run's secret (a fresh random one when "").
	Token string
	// Every is how often the data is read again while a page is open
	// (default 1 s).
	Every time.Duration
	// Await is how long a send from the page waits for a reply when asked
	// to (default 2 min).
	Await time.Duration
	// Stale is how long a machine's listing may run before the sessions
	// shown for it (its last good listing) are marked stale (default 5 s).
	// A listing that failed marks them stale at once.
	Stale time.Duration
	// Exposed is the bound address when it is not loopback only: the page
	// then says so in a banner ("" when loopback).
	Exposed string
	// Page is how many outbox messages the page shows at once (default
	// 500); older ones are reached a page at a time.
	Page int
	// Home is the user's home folder ("": none): the page shows it as "~"
	// in the messages' reasons.
	Home string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Dashboard is the page's http.Handler.
type Dashboard struct {
	b      Backend
	opt    Options
	origin string
	cookie string
	static http.Handler

	mu      sync.Mutex
	life    context.Context // Run's, which the reads run under
	snap    *snapshot       // the latest data (nil before the first)
	changed chan struct{}   // closed when snap changes
	readers int             // open event streams
	wake    chan struct{}
	dirty   chan struct{}         // an answer came: Run publishes it
	order   []string              // the machines, as Hosts named them last
	hosts   map[string]*hostState // what is known of each
	views   map[view]*viewState   // the pages of the outbox being shown
	pubMu   sync.Mutex            // one publish at a time, in order
}

// hostState is what the page knows of one machine across its reads.
type hostState struct {
	HostRead
	// done is closed when the read under way ends (nil: none runs).
	done chan struct{}
}

// HostRead is one machine as the page last knew it: the last listing
// that answered, the latest answer's error, when each came, and the read
// under way.
type HostRead struct {
	// Listing is the last listing that answered (only its Host set when
	// none has).
	Listing HostListing
	// Err is the latest answer's error ("" when it listed, or before any
	// answer).
	Err string
	// SeenAt is when Listing answered (zero: never).
	SeenAt time.Time
	// LastErr and LastErrAt are the last error and when it came, kept
	// after a later answer lists the machine ("", zero: none yet).
	LastErr   string
	LastErrAt time.Time
	// Since is when the read under way began (zero: none runs).
	Since time.Time
}

// listBound bounds one machine's listing (a host's own timeout, a
// minute by default, is shorter) and one read of the outbox.
const listBound = 2 * time.Minute

// firstWait is how long the first data waits for the machines' first
// answers: a machine that has not answered by then shows as being listed.
const firstWait = 2 * time.Second

// ErrToken is returned by New when no token can be made.
var ErrToken = errors.New("dashboard: no random token")

// New returns the dashboard over b; Run must run for the data to be read.
func New(b Backend, opt Options) (*Dashboard, error) {
	if opt.Token == "" {
		var k [32]byte
		if _, err := rand.Read(k[:]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrToken, err)
		}
		opt.Token = hex.EncodeToString(k[:])
	}
	if opt.Every <= 0 {
		opt.Every = time.Second
	}
	if opt.Await <= 0 {
		opt.Await = 2 * time.Minute
	}
	if opt.Stale <= 0 {
		opt.Stale = 5 * time.Second
	}
	if opt.Page <= 0 {
		opt.Page = 500
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	port := opt.Addr[strings.LastIndexByte(opt.Addr, ':')+1:]
	return &Dashboard{b: b, opt: opt, origin: "http://" + opt.Addr, cookie: "peerctl-" + port, static: http.FileServerFS(sub),
		changed: make(chan struct{}), wake: make(chan struct{}, 1), dirty: make(chan struct{}, 1), life: context.Background(), hosts: map[string]*hostState{},
		views: map[view]*viewState{}}, nil
}

// URL is the address to open, with the token.
func (d *Dashboard) URL() string { return d.origin + "/?token=" + d.opt.Token }

// Run reads the data now and again every Options.Every while a page
// listens to events, until ctx ends. Each machine and the outbox are read
// on their own, a new read starting only when the last one ended, and
// each answer is pushed when it comes.
func (d *Dashboard) Run(ctx context.Context) {
	d.mu.Lock()
	d.life = ctx
	d.mu.Unlock()
	t := time.NewTicker(d.opt.Every)
	defer t.Stop()
	for first := true; ; first = false {
		done := d.refresh(ctx)
		if first {
			// The first data waits a little for the first answers (so that
			// the page does not open on "listing…"); later ones not at all.
			w := time.NewTimer(firstWait)
			select {
			case <-done:
			case <-w.C:
			case <-ctx.Done():
			}
			w.Stop()
		}
		d.publish()
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
				break wait
			case <-d.dirty:
				d.publish()
			case <-t.C:
				d.mu.Lock()
				n := d.readers
				d.mu.Unlock()
				if n > 0 {
					break wait
				}
			}
		}
	}
}

// poke has Run read the data now.
func (d *Dashboard) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// answered has Run publish what came (answers that come together are
// published once).
func (d *Dashboard) answered() {
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// ServeHTTP checks the request (headers, Host, token, Origin) and
// answers it.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if r.Host != d.opt.Addr {
		// DNS rebinding: a name that points here is not this page.
		http.Error(w, "peerctl dashboard: this page is served as "+d.opt.Addr+" only", http.StatusMisdirectedRequest)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
		if !d.tokenOK(tok) {
			http.Error(w, "peerctl dashboard: wrong token: open the URL peerctl serve printed", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: d.cookie, Value: d.opt.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		to := r.URL.Path
		if len(q) > 0 {
			to += "?" + q.Encode()
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(d.cookie)
	switch {
	case err != nil || c.Value == "":
		http.Error(w, "peerctl dashboard: no token: open the URL peerctl serve printed (it has ?token=…)", http.StatusForbidden)
		return
	case !d.tokenOK(c.Value):
		// Most likely a cookie of an earlier run on the same port.
		http.Error(w, "peerctl dashboard: wrong token (each run of peerctl serve makes a new one): open the URL it printed this time", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if r.Header.Get("Origin") != d.origin {
			http.Error(w, "peerctl dashboard: a change must come from the page itself ("+d.origin+")", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
	}
	d.route(w, r)
}

func (d *Dashboard) tokenOK(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(d.opt.Token)) == 1
}

func (d *Dashboard) route(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/api/state" && r.Method == http.MethodGet:
		v, err := viewOf(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, err := d.stateOf(r.Context(), v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, b)
	case p == "/api/events" && r.Method == http.MethodGet:
		d.events(w, r)
	case p == "/api/send" && r.Method == http.MethodPost:
		d.send(w, r)
	case strings.HasPrefix(p, "/api/outbox/") && r.Method == http.MethodPost:
		d.change(w, r, strings.TrimPrefix(p, "/api/outbox/"))
	case strings.HasPrefix(p, "/api/"):
		http.NotFound(w, r)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		d.static.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// sendForm is the body of POST /api/send.
type sendForm struct {
	Address string `json:"address"`
	Text    string `json:"text"`
	Await   bool   `json:"await"`
}

// maxBody bounds a request's body (a message of the CLI's size and some).
const maxBody = 2 << 20

func (d *Dashboard) send(w http.ResponseWriter, r *http.Request) {
	var f sendForm
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&f); err != nil {
		http.Error(w, "peerctl dashboard: "+formError(err), http.StatusBadRequest)
		return
	}
	if f.Address == "" || f.Text == "" {
		http.Error(w, `peerctl dashboard: want {"address": "...", "text": "...", "await": true|false}: address and text must not be empty`, http.StatusBadRequest)
		return
	}
	var await time.Duration
	if f.Await {
		await = d.opt.Await
	}
	ctx, cancel := context.WithTimeout(r.Context(), await+5*time.Minute)
	defer cancel()
	d.finish(w, d.b.Send(ctx, d.address(f.Address), f.Text, await))
}

// formError says what is wrong with a body /api/send could not decode
// (err from encoding/json): the field of the wrong type and what it takes,
// else that it is not the JSON object asked for.
func formError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := "a string"
		if te.Field == "await" {
			want = "true or false"
		}
		return fmt.Sprintf("%q must be %s, not a JSON %s", te.Field, want, te.Value)
	}
	return `want {"address": "...", "text": "...", "await": true|false}: ` + err.Error()
}

// address is what send takes for addr, an address the page was given:
// the endpoint of the live session it names, as the page shows it (safe:
// home written "~"), else addr as it is.
func (d *Dashboard) address(addr string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, st := range d.hosts {
		for _, s := range st.Listing.Sessions {
			if s.Endpoint != "" && safe(s.Endpoint, d.opt.Home) == addr {
				return s.Endpoint
			}
		}
	}
	return addr
}

// changeForm is the body of POST /api/outbox/ID/cancel|retry|approve|deny
// ({} or none but for a confirmed retry).
type changeForm struct {
	// ConfirmOutcomeUnknown: the user was told that an outcome_unknown
	// message may have arrived already and asked to send it again.
	ConfirmOutcomeUnknown bool `json:"confirmOutcomeUnknown"`
}

func (d *Dashboard) change(w http.ResponseWriter, r *http.Request, rest string) {
	idText, op, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 1 || !slices.Contains([]string{"cancel", "retry", "approve", "deny"}, op) {
		http.NotFound(w, r)
		return
	}
	var f changeForm
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		http.Error(w, "peerctl dashboard: want {} or {confirmOutcomeUnknown: true}", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	switch op {
	case "cancel":
		d.finish(w, d.b.Cancel(ctx, id))
		return
	case "approve":
		d.finish(w, d.b.Approve(ctx, id))
		return
	case "deny":
		d.finish(w, d.b.Deny(ctx, id))
		return
	}
	res := d.b.Retry(ctx, id, f.ConfirmOutcomeUnknown)
	if !f.ConfirmOutcomeUnknown && refusedWith(res, "outcome_unknown") {
		// It is outcome_unknown (perhaps only since the page drew it):
		// the page asks the user first.
		d.result(w, http.StatusConflict, Result{Code: res.Code, JSON: json.RawMessage(fmt.Sprintf(`{"id":%d,"state":"outcome_unknown","needsConfirmation":true}`, id)),
			Stderr: res.Stderr})
		return
	}
	d.finish(w, res)
}

// refusedWith says whether res is a refusal with the word reason.
func refusedWith(res Result, reason string) bool {
	var doc struct {
		Refusal *struct {
			Reason string `json:"reason"`
		} `json:"refusal"`
	}
	return json.Unmarshal(res.JSON, &doc) == nil && doc.Refusal != nil && doc.Refusal.Reason == reason
}

// finish has the data read again (a change was made) and writes res.
func (d *Dashboard) finish(w http.ResponseWriter, res Result) {
	d.poke()
	d.result(w, http.StatusOK, res)
}

// result writes what a command gave with the HTTP status, its text made safe as the CLI
// prints it and home written "~" (every string of its JSON and its stderr: safeText), so that
// a reply, a detail or a name from the far side reaches the page escaped
// like the rest of its data.
func (d *Dashboard) result(w http.ResponseWriter, status int, res Result) {
	res.JSON = safeJSON(res.JSON, d.opt.Home)
	res.Stderr = safeText(res.Stderr, d.opt.Home)
	b, err := json.Marshal(res)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// safeJSON is raw with every string in it made safe (safeText, home ""
// for none written "~" but in a "text", words as sent); null when raw is
// not one JSON value.
func safeJSON(raw json.RawMessage, home string) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(safeValue(v, home))
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func safeValue(v any, home string) any {
	switch x := v.(type) {
	case string:
		return safeText(x, home)
	case []any:
		for i := range x {
			x[i] = safeValue(x[i], home)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "text" {
				out[safeText(k, home)] = safeValue(e, "")
				continue
			}
			out[safeText(k, home)] = safeValue(e, home)
		}
		return out
	}
	return v
}
