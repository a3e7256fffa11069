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
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assets embed.FS

// Backend is what the page shows and does; peerctl serve gives the real
// use cases, tests give fakes. Every method is called with a deadline.
type Backend interface {
	// Sessions lists every record (live or not) of each machine.
	Sessions(ctx context.Context) []HostListing
	// Messages lists the outbox, newest first (an error: it cannot be read).
	Messages(ctx context.Context) ([]Message, error)
	// Cancel and Retry are `peerctl outbox cancel|retry --json ID`.
	Cancel(ctx context.Context, id int64) Result
	Retry(ctx context.Context, id int64) Result
	// Send is `peerctl send --json ADDRESS TEXT`, with --await-reply
	// (await > 0) waiting that long for the answer.
	Send(ctx context.Context, address, text string, await time.Duration) Result
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
	data    []byte        // the latest State as JSON
	changed chan struct{} // closed when data changes
	readers int           // open event streams
	wake    chan struct{}
}

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
	if opt.Now == nil {
		opt.Now = time.Now
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	port := opt.Addr[strings.LastIndexByte(opt.Addr, ':')+1:]
	return &Dashboard{b: b, opt: opt, origin: "http://" + opt.Addr, cookie: "peerctl-" + port, static: http.FileServerFS(sub),
		changed: make(chan struct{}), wake: make(chan struct{}, 1)}, nil
}

// URL is the address to open, with the token.
func (d *Dashboard) URL() string { return d.origin + "/?token=" + d.opt.Token }

// Run reads the data now and again every Options.Every while a page
// listens to events, until ctx ends.
func (d *Dashboard) Run(ctx context.Context) {
	t := time.NewTicker(d.opt.Every)
	defer t.Stop()
	for {
		d.refresh(ctx)
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
				break wait
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

// refresh reads the data and, when it changed, tells the listeners.
func (d *Dashboard) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := d.Data(ctx)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if bytes.Equal(stripAt(b), stripAt(d.data)) {
		return
	}
	d.data = b
	close(d.changed)
	d.changed = make(chan struct{})
}

// stripAt is a State's JSON without its leading "at" field, so that two
// reads of the same data compare equal.
func stripAt(b []byte) []byte {
	if i := bytes.IndexByte(b, ','); i > 0 {
		return b[i:]
	}
	return b
}

// Data reads the backend and returns the page's data, State as JSON.
func (d *Dashboard) Data(ctx context.Context) ([]byte, error) {
	var (
		hosts []HostListing
		msgs  []Message
		mErr  error
		wg    sync.WaitGroup
	)
	wg.Go(func() { hosts = d.b.Sessions(ctx) })
	msgs, mErr = d.b.Messages(ctx)
	wg.Wait()
	why := ""
	if mErr != nil {
		why = mErr.Error()
	}
	return encode(Build(d.opt.Now(), hosts, msgs, why))
}

// latest is the latest data and the channel closed when it changes.
func (d *Dashboard) latest(ctx context.Context) ([]byte, <-chan struct{}) {
	d.mu.Lock()
	b, ch := d.data, d.changed
	d.mu.Unlock()
	if b == nil {
		d.refresh(ctx)
		d.mu.Lock()
		b, ch = d.data, d.changed
		d.mu.Unlock()
	}
	return b, ch
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
	if err != nil || !d.tokenOK(c.Value) {
		http.Error(w, "peerctl dashboard: no token: open the URL peerctl serve printed (it has ?token=…)", http.StatusForbidden)
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
		b, _ := d.latest(r.Context())
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

// events streams the data as server-sent events: the current data at
// once, then each change.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	d.mu.Lock()
	d.readers++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.readers--
		d.mu.Unlock()
	}()
	d.poke()
	w.Header().Set("Content-Type", "text/event-stream")
	ctx := r.Context()
	var sent []byte
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		b, ch := d.latest(ctx)
		if b != nil && !bytes.Equal(b, sent) {
			if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
			sent = b
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-keep.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
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
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&f); err != nil || f.Address == "" || f.Text == "" {
		http.Error(w, "peerctl dashboard: want {address, text, await}, both given", http.StatusBadRequest)
		return
	}
	var await time.Duration
	if f.Await {
		await = d.opt.Await
	}
	ctx, cancel := context.WithTimeout(r.Context(), await+5*time.Minute)
	defer cancel()
	res := d.b.Send(ctx, f.Address, f.Text, await)
	d.poke()
	d.result(w, res)
}

func (d *Dashboard) change(w http.ResponseWriter, r *http.Request, rest string) {
	idText, op, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 1 || op != "cancel" && op != "retry" {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	var res Result
	if op == "cancel" {
		res = d.b.Cancel(ctx, id)
	} else {
		res = d.b.Retry(ctx, id)
	}
	d.poke()
	d.result(w, res)
}

func (d *Dashboard) result(w http.ResponseWriter, res Result) {
	if len(res.JSON) == 0 || !json.Valid(res.JSON) {
		res.JSON = json.RawMessage("null")
	}
	b, err := json.Marshal(res)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, b)
}
