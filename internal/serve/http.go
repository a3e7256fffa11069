package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// DefaultHTTP is the address of serve --http given without one: loopback,
// a free port.
const DefaultHTTP = "127.0.0.1:0"

// dashboardHistory is how many of the newest outbox messages the page
// shows with their whole receipt chain (older ones: their state).
const dashboardHistory = 100

// defaultSendTimeout bounds a send typed into the page, as send's
// --timeout does by default.
const defaultSendTimeout = 30 * time.Second

// startHTTP starts the dashboard on o.HTTP for the service's life and
// prints its URL (with the token) on the log; a non-loopback address is
// warned about loudly. It returns when the listener is up.
func (s *Server) startHTTP() error {
	ln, err := net.Listen("tcp", s.o.HTTP)
	if err != nil {
		return fmt.Errorf("serve --http %s: %w", s.o.HTTP, err)
	}
	addr, loopback := boundAddr(s.o.HTTP, ln.Addr().(*net.TCPAddr))
	opt := dashboard.Options{Addr: addr, Home: s.o.Getenv("HOME")}
	if !loopback {
		opt.Exposed = addr
	}
	d, err := dashboard.New(webBackend{s: s}, opt)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if !loopback {
		fmt.Fprintf(s.o.Log, "peerctl serve: WARNING: the dashboard listens on %s, NOT loopback: anyone who can reach it and has the token can read every session and send into them; prefer ssh -L to a loopback one\n", wire.Safe(ln.Addr().String()))
	}
	fmt.Fprintf(s.o.Log, "peerctl serve: dashboard on %s\n", d.URL())
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

// webBackend is the dashboard's Backend: the service's use cases, with
// the service's own settings.
type webBackend struct{ s *Server }

var _ dashboard.Backend = webBackend{}

// Hosts names the dashboard's machines (Options.Machines; this one alone
// without).
func (b webBackend) Hosts(ctx context.Context) []string {
	if b.s.o.Machines == nil {
		return []string{""}
	}
	return b.s.o.Machines(ctx)
}

// Sessions lists every record of one machine of Hosts (Options.Sessions).
func (b webBackend) Sessions(ctx context.Context, host string) dashboard.HostListing {
	if b.s.o.Sessions == nil {
		return dashboard.HostListing{Host: host, Err: "listing is not available"}
	}
	return b.s.o.Sessions(ctx, host)
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
	f, ok := outboxFilter(q)
	if !ok {
		return out, nil
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
		o := wire.OutboxMessageOf(m, hist)
		o.Transcript = "" // a path of this machine the page has no use for
		out = append(out, o)
	}
	slices.SortStableFunc(out, func(x, y dashboard.Message) int { return parseTime(y.CreatedAt).Compare(parseTime(x.CreatedAt)) })
	return out, nil
}

// Count is how many outbox messages are in q's state (every page; a
// word only a plain send has, "failed", counts none).
func (b webBackend) Count(ctx context.Context, q dashboard.MessageQuery) (int, error) {
	st := b.s.store
	if st == nil {
		return 0, b.s.storeErr
	}
	f, ok := outboxFilter(q)
	if !ok {
		return 0, nil
	}
	f.Before = 0 // every page
	return st.Count(ctx, f)
}

// outboxFilter is the outbox's filter of q; ok is false for a state only
// a plain send has ("failed"): no outbox message is in it.
func outboxFilter(q dashboard.MessageQuery) (f ports.OutboxFilter, ok bool) {
	f = ports.OutboxFilter{Limit: q.Limit, Before: q.Before}
	if q.State != "" {
		state, err := domain.ParseOutboxState(q.State)
		if err != nil {
			return f, false
		}
		f.States = []domain.OutboxState{state}
	}
	return f, true
}

// parseTime reads a wire.RFC3339 time back (the zero time when it is not one).
func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// Cancel is outbox cancel of message id.
func (b webBackend) Cancel(ctx context.Context, id int64) dashboard.Result {
	return result(b.s.Serve(ctx, Request{V: Protocol, Op: "cancel", ID: id}, nil))
}

// Retry is outbox retry of message id, confirmed as the user said.
func (b webBackend) Retry(ctx context.Context, id int64, confirmed bool) dashboard.Result {
	return result(b.s.Serve(ctx, Request{V: Protocol, Op: "retry", ID: id, Confirmed: confirmed}, nil))
}

// Approve is outbox approve of message id, by the page's user (the
// dashboard entrance, which its history names).
func (b webBackend) Approve(ctx context.Context, id int64) dashboard.Result {
	return result(b.s.Serve(ctx, Request{V: Protocol, Op: "approve", ID: id, By: wire.SenderOf(domain.NewSender(domain.EntranceDashboard, ""))}, nil))
}

// Deny is outbox deny of message id, by the page's user.
func (b webBackend) Deny(ctx context.Context, id int64) dashboard.Result {
	return result(b.s.Serve(ctx, Request{V: Protocol, Op: "deny", ID: id, By: wire.SenderOf(domain.NewSender(domain.EntranceDashboard, ""))}, nil))
}

// Fleet is the service's live view of the fleet's bus (Options.Fleet).
func (b webBackend) Fleet() (wire.Listing, bool) { return b.s.o.Fleet.Listing() }

// Send is a plain send of text to address (a session here, or one of a
// host's by its ssh:v1: endpoint), awaiting a reply for await when
// positive, with the service's own settings, from the dashboard (the
// trust policy's sender: a hold keeps it awaiting approval).
func (b webBackend) Send(ctx context.Context, address, text string, await time.Duration) dashboard.Result {
	o := wire.SendOrder{Query: wire.SendQuery{Address: address, Text: text, Timeout: defaultSendTimeout, ConfirmTimeout: app.DefaultConfirmTimeout,
		AwaitReply: await}, Settings: b.s.o.Settings, Sender: domain.NewSender(domain.EntranceDashboard, "")}
	switch dest, inner, ok, err := domain.SplitHostEndpoint(address); {
	case err != nil:
		return result(failed(usageError{err}))
	case ok:
		o.Host, o.Query.Address = dest.String(), inner
	}
	return result(b.s.send(ctx, o, func(Ref) {}))
}

// result is an answer as the page shows it: the JSON `--json` prints (a
// receipt, a message, a refusal) and the lines for stderr.
func result(a Answer) dashboard.Result {
	res := dashboard.Result{Code: wire.ExitOK}
	var errLines []string
	errLines = append(errLines, a.Notes...)
	var doc any
	switch {
	case a.Refusal != nil:
		r, _ := domain.AsRefusal(a.Refusal.Err())
		res.Code = wire.ExitCode(r.Reason)
		doc = wire.RefusalDoc{Refusal: wire.RefusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: res.Code, Candidates: r.Candidates,
			Suggestions: r.Suggestions, Status: r.Status, StatusReason: r.StatusReason}}
		errLines = append(errLines, "peerctl: "+wire.Safe(r.Error()))
	case a.Error != nil:
		res.Code = a.Code
		errLines = append(errLines, "peerctl: "+wire.Safe(string(a.Error)))
	case a.Message != nil:
		doc = a.Message.OutboxMessage()
	case a.Sent != nil:
		out := a.Sent.Receipt
		out.Outbox = a.Ref.OutboxRef()
		doc = out
		res.Code = a.Sent.Code
		errLines = append(errLines, a.Sent.Notes...)
	}
	if doc != nil {
		res.JSON, _ = json.Marshal(doc)
	}
	if len(errLines) > 0 {
		res.Stderr = strings.Join(errLines, "\n") + "\n"
	}
	return res
}
