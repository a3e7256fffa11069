package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// defaultHTTP is the address of serve --http given without one: loopback,
// a free port.
const defaultHTTP = "127.0.0.1:0"

// webFlags are serve's dashboard flags.
type webFlags struct {
	addr  string   // --http ("": no dashboard)
	hosts []string // --host: machines listed beside the hosts file's
}

// dashboardHistory is how many of the newest outbox messages the page
// shows with their whole receipt chain (older ones: their state).
const dashboardHistory = 100

// startHTTP starts the dashboard on web.addr for the service's life and
// prints its URL (with the token) on stderr; a non-loopback address is
// warned about loudly. It returns when the listener is up.
func (s *server) startHTTP(web webFlags) error {
	dests, err := parseHosts(web.hosts, true)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", web.addr)
	if err != nil {
		return fmt.Errorf("serve --http %s: %w", web.addr, err)
	}
	addr, loopback := boundAddr(web.addr, ln.Addr().(*net.TCPAddr))
	opt := dashboard.Options{Addr: addr}
	if !loopback {
		opt.Exposed = addr
	}
	d, err := dashboard.New(webBackend{s: s, extra: dests, slots: make(chan struct{}, app.MaxParallelNodes)}, opt)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if !loopback {
		fmt.Fprintf(s.c.stderr, "peerctl serve: WARNING: the dashboard listens on %s, NOT loopback: anyone who can reach it and has the token can read every session and send into them; prefer ssh -L to a loopback one\n", safe(ln.Addr().String()))
	}
	fmt.Fprintf(s.c.stderr, "peerctl serve: dashboard on %s\n", d.URL())
	hs := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return s.life }}
	go d.Run(s.life)
	go func() { _ = hs.Serve(ln) }()
	go func() {
		<-s.life.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = hs.Close()
	}()
	return nil
}

// boundAddr is the host:port the page is served as: the address given
// with the port bound (an unspecified one, 0.0.0.0 or ::, named by this
// machine's host name), and whether it is loopback only.
func boundAddr(given string, got *net.TCPAddr) (string, bool) {
	host, _, err := net.SplitHostPort(given)
	if err != nil || host == "" {
		host = got.IP.String()
	}
	port := strconv.Itoa(got.Port)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return net.JoinHostPort(host, port), got.IP.IsLoopback()
}

// webBackend is the dashboard's Backend: the CLI's own use cases, run in
// the service as its commands would run them.
type webBackend struct {
	s     *server
	extra []domain.Dest // serve's --host
	// slots bounds the hosts listed at once, as list --hosts does (this
	// machine takes none: it never waits for a host).
	slots chan struct{}
}

var _ dashboard.Backend = webBackend{}

// Hosts names this machine (""), each host of the hosts file and each
// --host of serve, as `list --all --hosts` lists them.
func (b webBackend) Hosts(context.Context) []string {
	dests := []domain.Dest{{}}
	more, err := b.s.c.configuredHosts()
	if err == nil {
		if ds, err := parseHosts(more, true); err == nil {
			dests = append(dests, ds...)
		}
	}
	for _, d := range b.extra {
		if !slices.Contains(dests, d) {
			dests = append(dests, d)
		}
	}
	out := make([]string, len(dests))
	for i, d := range dests {
		out[i] = d.String()
	}
	return out
}

// Sessions lists every record of one machine of Hosts, as `list --all
// --json [--host DEST]` does.
func (b webBackend) Sessions(ctx context.Context, host string) dashboard.HostListing {
	c := b.s.c
	out := dashboard.HostListing{Host: host}
	dest := domain.Dest{}
	if host != "" {
		d, err := domain.ParseDest(host)
		if err != nil {
			out.Err = err.Error()
			return out
		}
		dest = d
		if b.slots != nil {
			select {
			case b.slots <- struct{}{}:
				defer func() { <-b.slots }()
			case <-ctx.Done():
				out.Err = domain.Refuse(domain.ReasonHostUnreachable, "%s: not listed: %d other hosts were being listed (%v)", dest, cap(b.slots), ctx.Err()).Error()
				return out
			}
		}
	}
	nodes, err := c.nodes([]domain.Dest{dest})
	if err != nil {
		out.Err = err.Error()
		return out
	}
	l, err := nodes[0].List(ctx, wire.ListQuery{All: true})
	out.Sessions, out.Notes, out.Version = l.Sessions, l.Notes, l.Version
	if dest.IsLocal() {
		out.Version = c.version().Version
	}
	if err != nil {
		out.Err = err.Error()
	}
	return out
}

// Messages is the page of the outbox q selects, newest first, the
// newest with their history, and on the first page the plain sends the
// service carried in q's state.
func (b webBackend) Messages(ctx context.Context, q dashboard.MessageQuery) ([]dashboard.Message, error) {
	out := q.Select(b.s.carriedSends())
	st := b.s.store
	if st == nil {
		return out, b.s.storeErr
	}
	f := ports.OutboxFilter{Limit: q.Limit, Before: q.Before}
	if q.State != "" {
		state, err := domain.ParseOutboxState(q.State)
		if err != nil {
			return out, nil // a word only a plain send has ("failed")
		}
		f.States = []domain.OutboxState{state}
	}
	msgs, err := st.List(ctx, f)
	if err != nil {
		return nil, err
	}
	for i, m := range msgs {
		var hist []ports.OutboxEvent
		if i < dashboardHistory {
			if _, h, err := st.Get(ctx, m.ID); err == nil {
				hist = h
			}
		}
		o := toOutboxJSON(m, hist)
		o.Transcript = "" // a path of this machine the page has no use for
		out = append(out, o)
	}
	slices.SortStableFunc(out, func(x, y dashboard.Message) int { return outboxParse(y.CreatedAt).Compare(outboxParse(x.CreatedAt)) })
	return out, nil
}

// outboxParse reads an outboxTime back (the zero time when it is not one).
func outboxParse(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// Cancel is `peerctl outbox cancel --json ID`.
func (b webBackend) Cancel(ctx context.Context, id int64) dashboard.Result {
	return b.run(ctx, "outbox", "cancel", "--json", strconv.FormatInt(id, 10))
}

// Retry is `peerctl outbox retry --json ID`.
func (b webBackend) Retry(ctx context.Context, id int64) dashboard.Result {
	return b.run(ctx, "outbox", "retry", "--json", strconv.FormatInt(id, 10))
}

// Send is `peerctl send --json [--await-reply=D] -- ADDRESS TEXT`.
func (b webBackend) Send(ctx context.Context, address, text string, await time.Duration) dashboard.Result {
	argv := []string{"send", "--json"}
	if await > 0 {
		argv = append(argv, "--await-reply="+await.String())
	}
	return b.run(ctx, append(argv, "--", address, text)...)
}

// run runs argv in the service with its own environment, as a client's
// command is run.
func (b webBackend) run(ctx context.Context, argv ...string) dashboard.Result {
	var out, errb bytes.Buffer
	sub := b.s.sub(b.s.c.environ(), "", &out, &errb)
	code := b.s.exec(ctx, sub, argv)
	res := dashboard.Result{Code: code, Stderr: errb.String()}
	if raw := bytes.TrimSpace(out.Bytes()); json.Valid(raw) {
		res.JSON = raw
	}
	return res
}
