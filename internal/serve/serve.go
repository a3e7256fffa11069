// Package serve is peerctl serve, the service: its socket and protocol,
// the durable outbox's loop, the warm couriers, and the dashboard's
// backend. It takes typed requests (wire.SendOrder, an outbox id) and
// calls the use cases (app.Outbox, a node's Send) directly: no command
// line runs in it, and no argv or environment reaches it (docs/SERVE.md).
package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// memoryLimit is the service's soft memory limit (runtime/debug;
// GOMEMLIMIT overrides it).
const memoryLimit = 64 << 20

// tick is how often the service looks for due messages when nothing woke
// it.
const tick = time.Second

// Options are what the program that runs the service gives it.
type Options struct {
	// Paths are the service's files.
	Paths Paths
	// Store opens the outbox (internal/outboxstore in peerctl-mcp, the
	// program serve runs as).
	Store wiring.Store
	// Log is the service's log (its stderr).
	Log io.Writer
	// Getenv and Environ are the service's own environment: what a
	// harness reads at delivery beyond a send's Settings (its home's
	// defaults, a server password), and what the programs it starts
	// begin from.
	Getenv  func(string) string
	Environ func() []string
	// Settings are the service's own (serve's flags): the dashboard's
	// sends use them.
	Settings wire.Settings
	// Version is this build's version (named to other machines); Build
	// the same as peerctl --version prints it, with its revision (serve
	// status).
	Version, Build string
	// IdleExit ends the service after that long with no request (on its
	// socket, or Activity's) and nothing to deliver (0: never): serve
	// --idle-exit.
	IdleExit time.Duration
	// Activity counts the requests of other nodes (nil: none).
	Activity *Activity
	// Retention is how long a finished message is kept before it is
	// pruned (0: every one is kept): serve --retention.
	Retention time.Duration
	// HTTP is the dashboard's address ("": none); Hosts the machines it
	// lists beside the hosts file's.
	HTTP  string
	Hosts []domain.Dest
	// Listing lists the dashboard's machines (the command line's list):
	// Machines names them, Sessions lists one.
	Machines func(ctx context.Context) []string
	Sessions func(ctx context.Context, host string) dashboard.HostListing
	// Remote is the channel to other machines for a send's settings (nil:
	// the system ssh, sshhost).
	Remote func(wire.Settings) (ports.Remote, error)
	// Join, when set, joins the fleet's bus for the service's life (the
	// command line's: its presence, docs/FLEET.md), once the service holds
	// its state folder: an error ends the service before it serves (a
	// node name another live service holds); the wait it returns waits,
	// once life has ended, for the node to have left the bus.
	// answering is the node another node's requests run on
	// (Server.Answering: their sends on the service's warm couriers, one
	// its trust policy holds kept awaiting approval); mail is the
	// service's outbox for other nodes' durable sends (nil when the
	// outbox cannot be used: their mail waits on the bus); post puts a
	// durable send in another node's mail (nil: no bus).
	Join func(life context.Context, answering Answerer, mail wiring.Mailbox) (wait func(), post wiring.PostMail, err error)
	// Fleet is the live view of every node's presence that Join keeps
	// (nil: no bus): the "fleet" request and the dashboard's fleet.
	Fleet *wiring.FleetView
	// Bus is the service's place on the fleet's bus (nil: none), whose
	// connection carries this machine's --host nats:NODE requests (the
	// "bus" op).
	Bus *BusLink
}

// Answerer is the node a request of node sender runs on, made from
// base, the command line's use cases (Server.Answering).
type Answerer func(base app.LocalNode, sender string) app.Node

// Server is a running peerctl serve.
type Server struct {
	o     Options
	life  context.Context
	ob    *app.Outbox // nil when the outbox cannot be used (storeErr says why)
	store wiring.OutboxReader
	// storeErr is why durable sends are refused (nil when they are not).
	storeErr error

	mu       sync.Mutex // guards warm, inflight, last, running, watched, carried
	warm     map[string]*warmSet
	inflight map[int64]bool
	last     time.Time
	running  int
	wake     chan struct{}
	// early is set when a watched registry folder changed: the next pass
	// tries every waiting message now, not at its backoff's time (at most
	// one such pass per earlyEvery: earlyAt, the loop's, is when the next
	// may run); stirred wakes the loop for it.
	early   atomic.Bool
	earlyAt time.Time
	stirred chan struct{}
	folders ports.FolderWatcher
	watched map[string]bool
	// jobs are the attempts that wait (waits) running beside the loop.
	jobs sync.WaitGroup
	// now is the clock of the loop's decisions (tests).
	now func() time.Time
	// carried are the plain sends the service ran, oldest first (carry);
	// sentPath is the file that keeps them ("": none), sentLines how many
	// lines it has.
	carried   []wire.OutboxMessage
	sentPath  string
	sentLines int
	// post puts a durable send in another node's mail on the fleet's
	// bus (nil: the service is not on one).
	post wiring.PostMail
	// started is when the service began (status).
	started time.Time
	// stop ends the service, the cause saying why (logged); ended holds
	// what waits for its end (serve stop).
	stop  context.CancelCauseFunc
	ended *end
	// fleetDoc is the "fleet" answer with its document, as written, for
	// the view's generation fleetGen (nil: none made yet).
	fleetMu  sync.Mutex
	fleetGen uint64
	fleetDoc []byte
	// releases follows the held messages for their release (followHeld).
	releases heldFollow
}

// newServer is a Server over o with no outbox yet, living for life (Run
// sets how it stops).
func newServer(life context.Context, o Options) *Server {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Environ == nil {
		o.Environ = func() []string { return nil }
	}
	return &Server{o: o, life: life, warm: map[string]*warmSet{}, inflight: map[int64]bool{}, last: time.Now(),
		wake: make(chan struct{}, 1), stirred: make(chan struct{}, 1), now: time.Now, folders: wiring.NewFolderWatcher(), watched: map[string]bool{},
		started: time.Now(), stop: func(error) {}, ended: &end{}}
}

// Run runs the service until ctx ends, a stop request comes or it was
// idle for o.IdleExit: one per state folder (its lock), listening on
// o.Paths.Socket. Its log says why it stops, and that it stopped.
func Run(ctx context.Context, o Options) error {
	p := o.Paths
	release, err := wiring.TryServeLock(p.Lock)
	if errors.Is(err, wiring.ErrServeLocked) {
		pid, _ := os.ReadFile(p.Lock)
		return fmt.Errorf("another peerctl serve (pid %s) already serves %s: one service per state folder; use it as it is, or peerctl serve stop, then peerctl serve with the options you want (such as --http)", strings.TrimSpace(string(pid)), p.StateDir)
	}
	if err != nil {
		return err
	}
	ended := &end{}
	defer ended.finish(o.Log)
	defer func() { _ = release() }()
	if os.Getenv("GOMEMLIMIT") == "" {
		// A long-lived service builds a graph per send: collect garbage
		// before the heap doubles past a few tens of MiB.
		debug.SetMemoryLimit(memoryLimit)
	}
	ln, err := wiring.ListenServe(p.Socket)
	if err != nil {
		return err
	}
	life, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	s := newServer(life, o)
	s.stop, s.ended = stop, ended
	if st, err := o.Store.Open(ctx, p.DB, upgradeV2); err != nil {
		s.storeErr = err
		fmt.Fprintf(o.Log, "peerctl serve: durable sends are refused: %s\n", wire.Safe(err.Error()))
	} else {
		s.store, s.ob = st, app.NewOutbox(faulty(life, st, o.Log), nil).WithRetention(o.Retention)
		defer func() { _ = st.Close() }()
		// The folder is checked now (private, ours): the plain sends are
		// kept beside the outbox.
		if err := s.loadSent(p.StateDir, o.Retention); err != nil {
			fmt.Fprintf(o.Log, "peerctl serve: the plain sends shown on the page are not kept across restarts: %s\n", wire.Safe(err.Error()))
		}
	}
	defer s.closeWarm()
	if o.Join != nil {
		var mail wiring.Mailbox
		if s.ob != nil {
			mail = s
		}
		left, post, err := o.Join(life, s.Answering, mail)
		if err != nil {
			return err
		}
		s.post = post
		defer func() {
			stop(nil) // the node leaves when the service's life ends
			left()
		}()
	}
	fmt.Fprintf(o.Log, "peerctl serve: pid %d on %s, outbox %s\n", os.Getpid(), wire.Safe(p.Socket), wire.Safe(p.DB))
	if o.HTTP != "" {
		if err := s.startHTTP(); err != nil {
			return err
		}
	}
	go func() {
		<-life.Done()
		_ = ln.Close()
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.loop(o.IdleExit)
	}()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			stop(fmt.Errorf("accept: %w", err))
			ended.stopping(o.Log, context.Cause(life))
			wg.Wait()
			if life.Err() != nil {
				return nil
			}
			return fmt.Errorf("serve: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(conn)
		}()
	}
}

// handle answers one connection: peer credentials first, then one request.
func (s *Server) handle(conn *net.UnixConn) {
	defer func() { _ = conn.Close() }()
	if uid, err := wiring.ServePeerCheck(conn); err != nil {
		fmt.Fprintf(s.o.Log, "peerctl serve: refused a connection: %v\n", err)
		_ = WriteLine(conn, Answer{Done: true, Code: wire.ExitError,
			Error: fmt.Appendf(nil, "this service serves uid %d only; the connection is from uid %d", os.Geteuid(), uid)})
		return
	}
	r := bufio.NewReader(conn)
	var req Request
	if err := ReadLine(r, &req); err != nil {
		_ = WriteLine(conn, Answer{Done: true, Code: wire.ExitError, Error: fmt.Appendf(nil, "bad request to the service: %v", err)})
		return
	}
	if req.V != Protocol {
		_ = WriteLine(conn, Answer{Done: true, Code: wire.ExitError,
			Error: fmt.Appendf(nil, "the service speaks protocol %d, this peerctl %d: stop the service (it is an older or newer peerctl)", Protocol, req.V)})
		return
	}
	switch req.Op {
	case "ping":
		// A look (serve status) is no use: it does not keep the service up.
		_ = WriteLine(conn, s.Serve(s.life, req, nil))
		return
	case "stop":
		s.stopAsked(conn)
		return
	}
	s.touch(1)
	defer s.touch(-1)
	if req.Op == "fleet" {
		_, _ = conn.Write(s.fleet(req))
		return
	}
	// The client hanging up cancels the request (Ctrl-C on its side).
	ctx, cancel := context.WithCancel(s.life)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	var mu sync.Mutex // a send's talk may come from its wait's goroutine
	say := func(a Answer) {
		mu.Lock()
		defer mu.Unlock()
		_ = WriteLine(conn, a)
	}
	ended := func() {}
	if req.Talk && req.Op == "send" {
		ctx, ended = talking(ctx, say)
	}
	a := s.Serve(ctx, req, func(ref Ref) { say(Answer{Stored: &ref}) })
	ended() // nothing is said after the final line
	say(a)
}

// Serve answers one request; stored hears, before the answer, that a
// durable send's message is in the outbox.
func (s *Server) Serve(ctx context.Context, req Request, stored func(Ref)) Answer {
	switch req.Op {
	case "ping":
		a := Answer{Done: true, PID: os.Getpid(), Outbox: s.o.Paths.DB, Status: s.status()}
		if s.storeErr != nil {
			a.OutboxError = s.storeErr.Error()
		}
		return a
	case "send":
		if req.Send == nil {
			return Answer{Done: true, Code: wire.ExitUsage, Usage: true, Error: []byte("a send request without its send")}
		}
		if strings.HasPrefix(req.Send.Key, MailKeyPrefix) {
			return Answer{Done: true, Code: wire.ExitUsage, Usage: true,
				Error: fmt.Appendf(nil, "--key: a key beginning %q is another node's (durable sends across machines): give another", MailKeyPrefix)}
		}
		return s.send(ctx, *req.Send, stored)
	case "bus":
		return s.carryBus(ctx, req)
	case "cancel":
		return s.change(ctx, req.ID, func(ctx context.Context, id int64) (ports.OutboxMessage, error) {
			return s.ob.Cancel(ctx, id, "cancelled by outbox cancel")
		})
	case "retry":
		return s.change(ctx, req.ID, func(ctx context.Context, id int64) (ports.OutboxMessage, error) {
			return s.retry(ctx, id, req.Confirmed)
		})
	case "approve":
		return s.change(ctx, req.ID, func(ctx context.Context, id int64) (ports.OutboxMessage, error) {
			return s.ob.Approve(ctx, id, senderFrom(req.By))
		})
	case "deny":
		return s.change(ctx, req.ID, func(ctx context.Context, id int64) (ports.OutboxMessage, error) {
			return s.ob.Deny(ctx, id, senderFrom(req.By))
		})
	}
	return Answer{Done: true, Code: wire.ExitUsage, Usage: true, Error: fmt.Appendf(nil, "unknown request %q", req.Op)}
}

// change runs outbox cancel, retry, approve or deny of message id (the
// outbox's one writer is the service).
func (s *Server) change(ctx context.Context, id int64, do func(context.Context, int64) (ports.OutboxMessage, error)) Answer {
	if s.ob == nil {
		return failed(OutboxUnavailable(s.storeErr))
	}
	m, err := do(ctx, id)
	switch {
	case errors.Is(err, ports.ErrNoMessage):
		return failed(domain.Refuse(domain.ReasonNotFound, "message %d is not in the outbox (peerctl outbox lists them)", id))
	case errors.Is(err, app.ErrUnconfirmed):
		return failed(&domain.Refusal{Reason: domain.ReasonOutcomeUnknown, Detail: err.Error(), Err: err})
	case errors.Is(err, app.ErrNotPending), errors.Is(err, app.ErrOnTheBus), errors.Is(err, app.ErrNotRetryable), errors.Is(err, app.ErrWaiting), errors.Is(err, app.ErrNotAwaiting):
		return failed(&domain.Refusal{Reason: domain.ReasonWrongState, Detail: err.Error(), Err: err})
	case err != nil:
		return failed(OutboxUnavailable(err))
	}
	s.poke()
	return Answer{Done: true, Message: MessageOf(m, nil)}
}

// senderFrom is an approver as a request names it (By; nil: unknown).
func senderFrom(by *wire.Sender) domain.Sender {
	if by == nil {
		return domain.Sender{}
	}
	e, _ := domain.ParseEntrance(by.Entrance)
	return domain.NewSender(e, by.Where).WithSession(by.SessionName, by.SessionID)
}

// retry is outbox retry of message id: an outcome_unknown message, once
// confirmed, for this machine is looked at first with the Service its
// stored order names (app.Outbox.Retry; nil when it cannot be built: not
// looked at); unconfirmed, it is refused (app.ErrUnconfirmed).
func (s *Server) retry(ctx context.Context, id int64, confirmed bool) (ports.OutboxMessage, error) {
	var svc *app.Service
	if m, _, err := s.store.Get(ctx, id); err == nil && confirmed {
		var release func()
		svc, release = s.looker(ctx, m)
		defer release()
	}
	return s.ob.Retry(ctx, svc, id, confirmed)
}

// looker is the Service that looks at outcome_unknown message m's
// transcript before it is retried, built from its stored order (nil when
// m is not outcome_unknown, is for another machine, or it cannot be
// built: not looked at); release frees it.
func (s *Server) looker(_ context.Context, m ports.OutboxMessage) (svc *app.Service, release func()) {
	if m.State != domain.OutboxOutcomeUnknown || m.Host != "" {
		return nil, func() {}
	}
	o, err := loadOrder(m)
	if err != nil {
		return nil, func() {}
	}
	got, release, _, err := s.service(o.Settings, o.Query, sendingOf(o, m.ApprovedBy != ""))
	if err != nil {
		return nil, func() {}
	}
	return got, release
}

// MessageOf is m (with its history hist) as an answer's Message.
func MessageOf(m ports.OutboxMessage, hist []ports.OutboxEvent) *Message {
	return &Message{Doc: wire.OutboxMessageOf(m, hist), Key: []byte(m.Key), Address: []byte(m.Address), Text: []byte(m.Text)}
}

// OutboxUnavailable is the refusal of a durable request that found no
// outbox to keep it (err says why): nothing was stored.
func OutboxUnavailable(err error) error {
	return &domain.Refusal{Reason: domain.ReasonOutboxUnavailable, Err: err,
		Detail: strings.TrimSuffix(err.Error(), ".") + "; nothing was stored (a send without --durable still works)"}
}

// touch counts a request in (+1) or out (-1) and notes the activity.
func (s *Server) touch(d int) {
	s.mu.Lock()
	s.running += d
	s.last = time.Now()
	s.mu.Unlock()
}

// claim marks message id as being worked on; false when it already is.
func (s *Server) claim(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false
	}
	s.inflight[id] = true
	return true
}

func (s *Server) release(id int64) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.last = time.Now()
	s.mu.Unlock()
}

// poke wakes the loop.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop works through due messages, one at a time in id order (so in order
// per target; an attempt that waits for a take-up or a reply runs beside
// it, its address held until it is handed over), until the service ends;
// an interrupted attempt is checked (Recover) before it is attempted
// again. With quiet > 0 it ends the service once no request came for
// quiet and no message waits.
func (s *Server) loop(quiet time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	early := time.NewTimer(earlyEvery)
	early.Stop()
	defer s.jobs.Wait()
	for {
		s.pass()
		s.trimWarm(time.Now())
		if quiet > 0 && s.quiet(quiet) {
			s.stop(fmt.Errorf("idle for %s with nothing to deliver (--idle-exit)", quiet))
			return
		}
		if !s.await(t.C, early) {
			return
		}
	}
}

// await waits for the loop's next pass: a tick, a poke (a message stored
// or handed over, a change asked for: never held up), or a registry
// change (s.stirred) once an early pass may run, at most one per
// earlyEvery: a change sooner arms early for that time and waits on,
// however often records change. False when the service ends.
func (s *Server) await(tick <-chan time.Time, early *time.Timer) bool {
	for {
		select {
		case <-s.life.Done():
			return false
		case <-tick:
		case <-s.wake:
		case <-early.C:
		case <-s.stirred:
			if d := s.earlyAt.Sub(s.now()); d > 0 {
				early.Reset(d)
				continue
			}
		}
		return true
	}
}

// quiet reports whether the service has been idle for d with nothing to deliver.
func (s *Server) quiet(d time.Duration) bool {
	s.mu.Lock()
	idle := s.running == 0 && len(s.inflight) == 0 && time.Since(s.last) >= d
	s.mu.Unlock()
	idle = idle && s.o.Activity.idle(d)
	if !idle || s.store == nil {
		return idle
	}
	pending, err := s.store.List(s.life, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}, Limit: 1})
	return err == nil && len(pending) == 0
}

// earlyEvery bounds how often a registry change makes a pass try every
// waiting message (sessions update their records every few seconds): an
// early pass is at least earlyEvery after the last one, by the loop's
// clock; a pass sooner is a plain one, and the change waits for its time.
const earlyEvery = time.Second

// posted reports whether m is on the fleet's bus, in its node's mail
// (app.Outbox.Forward): the bus keeps the order of a node's mail, so it
// holds up no later message to its target, and only its expiry is due here.
func posted(m ports.OutboxMessage) bool {
	return m.State == domain.OutboxStored && m.Transport == app.BusTransport
}

// toNode reports whether m is for a node of the fleet's bus (host nats:NODE).
func toNode(m ports.OutboxMessage) bool {
	d, err := domain.ParseDest(m.Host)
	if err != nil {
		return false
	}
	_, ok := d.Node()
	return ok
}

// takeEarly reports whether the pass at now is early: a registry change
// asked for one (s.early) and the last early pass was earlyEvery ago or
// more; a change sooner stays asked for.
func (s *Server) takeEarly(now time.Time) bool {
	if !s.early.Swap(false) {
		return false
	}
	if now.Before(s.earlyAt) {
		s.early.Store(true)
		return false
	}
	s.earlyAt = now.Add(earlyEvery)
	return true
}

// pass works through the waiting messages in id order. For each address
// (on each machine) only the oldest waiting message is tried, so messages
// to one address go in order: it is tried when due (or at once after a
// registry change, at most once per earlyEvery: takeEarly), an
// interrupted attempt is checked; the next one to the same address is
// tried in the same pass once it has been handed over. A message for a
// node of the bus is handed over once it is in the node's mail (posted):
// the ones behind it are posted after it, in order, by the same job,
// without waiting for its receipts. The pass never waits for time.
func (s *Server) pass() {
	if s.store == nil {
		return
	}
	if n, err := s.ob.Prune(s.life); err != nil {
		fmt.Fprintf(s.o.Log, "peerctl serve: prune the outbox: %s\n", wire.Safe(err.Error()))
	} else if n > 0 {
		what := fmt.Sprintf("%d messages", n)
		if n == 1 {
			what = "1 message"
		}
		fmt.Fprintf(s.o.Log, "peerctl serve: pruned %s finished longer ago than the retention period\n", what)
	}
	now := s.now()
	s.followHeld(now)
	early := s.takeEarly(now)
	waiting, err := s.store.List(s.life, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}})
	if err != nil {
		if s.life.Err() == nil {
			fmt.Fprintf(s.o.Log, "peerctl serve: %s\n", wire.Safe(err.Error()))
		}
		return
	}
	slices.Reverse(waiting) // oldest first
	blocked := map[string]bool{}
	for i, m := range waiting {
		if s.life.Err() != nil {
			return
		}
		target := m.Host + "\x00" + m.Address // one order per address on each machine
		if posted(m) {
			if !m.NextAt.After(now) && s.claim(m.ID) { // its expiry
				s.beside(m)
			}
			continue
		}
		if blocked[target] {
			continue
		}
		blocked[target] = true
		if m.State == domain.OutboxStored && m.NextAt.After(now) && !early || !s.claim(m.ID) {
			continue
		}
		if m.State == domain.OutboxStored && (waits(m.Request) || m.Host != "") {
			// Minutes of waiting for a take-up or a reply, or a host's
			// connect timeout, hold up no other target; this one's next
			// message waits until it is handed over.
			var then []ports.OutboxMessage
			if toNode(m) {
				then = slices.DeleteFunc(slices.Clone(waiting[i+1:]), func(n ports.OutboxMessage) bool {
					return n.Host+"\x00"+n.Address != target || n.State != domain.OutboxStored || posted(n)
				})
			}
			s.beside(m, then...)
			continue
		}
		done := s.job(m, m.State == domain.OutboxDelivering)
		s.release(m.ID)
		blocked[target] = done.State.Pending() || done.State == domain.OutboxOutcomeUnknown
	}
}

// beside attempts m, claimed, in a job beside the loop, then each of then
// (the messages behind m to its node, oldest first) as long as the one
// before it was posted and it can be claimed; the loop is poked after.
func (s *Server) beside(m ports.OutboxMessage, then ...ports.OutboxMessage) {
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		defer s.poke()
		done := s.job(m, false)
		s.release(m.ID)
		for _, n := range then {
			if !posted(done) || !s.claim(n.ID) {
				return
			}
			done = s.job(n, false)
			s.release(n.ID)
		}
	}()
}

// watch has the folders of every harness's registry that svc reads
// watched, so that a session appearing wakes the loop (s.early).
func (s *Server) watch(ctx context.Context, svc *app.Service) {
	l, err := svc.Read(ctx)
	if err != nil && l.Dir == "" {
		return
	}
	for _, dir := range append([]string{l.Dir}, l.Also...) {
		s.mu.Lock()
		seen := s.watched[dir]
		s.watched[dir] = true
		s.mu.Unlock()
		if seen || dir == "" {
			continue
		}
		ch, err := s.folders.Watch(s.life, dir)
		if err != nil {
			continue
		}
		go func() {
			for range ch {
				s.early.Store(true)
				select {
				case s.stirred <- struct{}{}:
				default:
				}
			}
		}()
	}
}
