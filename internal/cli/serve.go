package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/adapters/fswatch"
	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// serveEnv is the variable that, set to "off", keeps every command from
// using or starting peerctl serve.
const serveEnv = "PEERCTL_SERVE"

// defaultQuiet is how long an on-demand service waits, with an empty
// outbox and no request, before it ends itself.
const defaultQuiet = 10 * time.Minute

// serveMemoryLimit is the service's soft memory limit (runtime/debug;
// GOMEMLIMIT overrides it).
const serveMemoryLimit = 64 << 20

// serveTick is how often the service looks for due messages when nothing
// woke it.
const serveTick = time.Second

// servePaths are where the service's files are for an environment.
type servePaths struct {
	stateDir, db, lock, socket string
}

func pathsFor(getenv func(string) string) (servePaths, error) {
	state, err := outbox.Dir(getenv)
	if err != nil {
		return servePaths{}, err
	}
	run, err := servesock.Dir(getenv)
	if err != nil {
		return servePaths{}, err
	}
	return servePaths{stateDir: state, db: filepath.Join(state, outbox.FileName), lock: filepath.Join(state, servesock.LockName),
		socket: filepath.Join(run, servesock.SocketName(state))}, nil
}

func (c *cli) serveCmd() *cobra.Command {
	var (
		idleExit  time.Duration
		printUnit string
		web       webFlags
		retention func() (time.Duration, error)
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: a durable outbox and a warm courier (foreground)",
		Long: helpLong("Run peerctl's service in the foreground: it keeps send --durable messages until their target can take them, and sends through one warm courier", "serve") + `

With --http it also serves the dashboard, one page in the browser: the live sessions of this machine, of each host
of the hosts file and of each --host, by host (every record with --all's verdict behind a toggle); the outbox's
messages with their receipts, to cancel or retry; a send form, the same send as peerctl send; each host's state.
Changes show within about 2 s. It listens on loopback (127.0.0.1, a free port) unless --http=ADDR names another
address, and then warns that the page is exposed. Open the URL it prints: its token goes into a cookie and every
request must carry it. With --http the service runs until Ctrl-C unless --idle-exit is given.

One service per state folder ($XDG_STATE_HOME): peerctl serve status shows it, peerctl serve stop ends it.`,
		Example: `  peerctl serve                       # in a terminal; Ctrl-C ends it
  peerctl serve --print-unit=systemd > ~/.config/systemd/user/peerctl.service
  peerctl serve --http                # and the dashboard on loopback: open the URL it prints
  peerctl serve --http=127.0.0.1:8080 --host dev-box   # a fixed port; dev-box's sessions listed too
  PEERCTL_SERVE=off peerctl send proj-89 "no service for this one"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.stderr = stampLines(c.stderr) // the service's log: every line with its time
			if cmd.Flags().Changed("quiet") {
				fmt.Fprintln(c.stderr, "peerctl: --quiet is the old name of --idle-exit (the same duration): use --idle-exit")
			}
			if idleExit < 0 {
				return usageError{fmt.Errorf("--idle-exit %s: want a duration such as 10m, or 0 to never end on its own", idleExit)}
			}
			if len(web.hosts) > 0 && web.addr == "" {
				return usageError{fmt.Errorf("--host %s: the machines of the dashboard; give --http too", safe(web.hosts[0]))}
			}
			if printUnit != "" {
				return c.printUnit(printUnit)
			}
			if web.addr != "" && !cmd.Flags().Changed("idle-exit") && !cmd.Flags().Changed("quiet") {
				idleExit = 0 // a dashboard stays until Ctrl-C
			}
			keep, err := retention()
			if err != nil {
				return err
			}
			c.started()
			return c.runServe(cmd.Context(), idleExit, keep, web)
		},
	}
	cmd.Flags().DurationVar(&idleExit, "idle-exit", defaultQuiet, "end after this long with no request and nothing to deliver (0: never)")
	cmd.Flags().DurationVar(&idleExit, "quiet", defaultQuiet, "the old name of --idle-exit")
	// Hidden, not MarkDeprecated: cobra prints that notice on stdout, into
	// a --print-unit's file.
	_ = cmd.Flags().MarkHidden("quiet")
	cmd.Flags().StringVar(&printUnit, "print-unit", "", "print a systemd --user unit or a launchd LaunchAgent plist, then exit")
	cmd.Flags().StringVar(&web.addr, "http", "", "also serve the dashboard, a live page of every session, message and host, on this address (--http=ADDR; alone: "+defaultHTTP+", loopback, a free port); the URL printed at start carries the token")
	cmd.Flags().Lookup("http").NoOptDefVal = defaultHTTP
	cmd.Flags().StringArrayVar(&web.hosts, "host", nil, "with --http: a machine (ssh DEST) the dashboard lists beside this one and the hosts file's; repeatable")
	retention = c.retentionFlag(cmd)
	c.harnessFlags(cmd)
	cmd.AddCommand(c.serveStatusCmd(), c.serveStopCmd())
	return cmd
}

// server is a running peerctl serve.
type server struct {
	c     *cli // the serve command's own (its stderr is the service's log)
	paths servePaths
	life  context.Context
	ob    *app.Outbox // nil when the outbox cannot be used (storeErr says why)
	store *outbox.Store
	// storeErr is why durable sends are refused (nil when they are not).
	storeErr error

	mu       sync.Mutex // guards warm, inflight, last, running
	warm     map[string]*warmSet
	inflight map[int64]bool
	last     time.Time
	running  int
	wake     chan struct{}
	// early is set when a watched registry folder changed: the next pass
	// tries every waiting message now, not at its backoff's time.
	early   atomic.Bool
	folders *fswatch.Folder
	watched map[string]bool // registry folders watched (under mu)
	// jobs are the attempts that wait (waits) running beside the loop.
	jobs sync.WaitGroup
	// now is the clock of the loop's decisions (tests).
	now func() time.Time
	// carried are the plain sends the service ran, oldest first (carry;
	// under mu).
	carried []wire.OutboxMessage
	// started is when the service began; idleExit its --idle-exit (status).
	started  time.Time
	idleExit time.Duration
	// stop ends the service, the cause saying why (logged); ended holds
	// what waits for its end (serve stop).
	stop  context.CancelCauseFunc
	ended *serveEnd
}

func (c *cli) runServe(ctx context.Context, quiet, retention time.Duration, web webFlags) error {
	p, err := pathsFor(c.getenv)
	if err != nil {
		return err
	}
	lock, err := servesock.TryLock(p.lock)
	if errors.Is(err, servesock.ErrLocked) {
		pid, _ := os.ReadFile(p.lock)
		return fmt.Errorf("another peerctl serve (pid %s) already serves %s: one service per state folder; stop it first, or use it as it is", strings.TrimSpace(string(pid)), p.stateDir)
	}
	if err != nil {
		return err
	}
	ended := &serveEnd{}
	defer ended.finish(c.stderr)
	defer func() { _ = lock.Release() }()
	if os.Getenv("GOMEMLIMIT") == "" {
		// A long-lived service builds a graph per send: collect garbage
		// before the heap doubles past a few tens of MiB.
		debug.SetMemoryLimit(serveMemoryLimit)
	}
	ln, err := servesock.Listen(p.socket)
	if err != nil {
		return err
	}
	life, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	s := &server{c: c, paths: p, life: life, warm: map[string]*warmSet{}, inflight: map[int64]bool{}, last: time.Now(),
		wake: make(chan struct{}, 1), now: time.Now, folders: fswatch.NewFolder(), watched: map[string]bool{},
		started: time.Now(), idleExit: quiet, stop: stop, ended: ended}
	if st, err := outbox.Open(ctx, p.db); err != nil {
		s.storeErr = err
		fmt.Fprintf(c.stderr, "peerctl serve: durable sends are refused: %s\n", safe(err.Error()))
	} else {
		s.store, s.ob = st, app.NewOutbox(st, nil).WithRetention(retention)
		defer func() { _ = st.Close() }()
	}
	defer s.closeWarm()
	fmt.Fprintf(c.stderr, "peerctl serve: pid %d on %s, outbox %s\n", os.Getpid(), safe(p.socket), safe(p.db))
	if web.addr != "" {
		if err := s.startHTTP(web); err != nil {
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
		s.loop(quiet)
	}()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			stop(fmt.Errorf("accept: %w", err))
			ended.stopping(c.stderr, context.Cause(life))
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
func (s *server) handle(conn *net.UnixConn) {
	defer func() { _ = conn.Close() }()
	if uid, err := servesock.PeerCheck(conn); err != nil {
		fmt.Fprintf(s.c.stderr, "peerctl serve: refused a connection: %v\n", err)
		_ = writeLine(conn, serveAnswer{Stderr: fmt.Sprintf("peerctl: this service serves uid %d only; the connection is from uid %d\n", os.Geteuid(), uid), Code: wire.ExitError})
		return
	}
	r := bufio.NewReader(conn)
	var req serveRequest
	if err := readLine(r, &req); err != nil {
		_ = writeLine(conn, serveAnswer{Stderr: fmt.Sprintf("peerctl: bad request to the service: %v\n", err), Code: wire.ExitError})
		return
	}
	if req.V != serveProtocol {
		_ = writeLine(conn, serveAnswer{Stderr: fmt.Sprintf("peerctl: the service speaks protocol %d, this peerctl %d: stop the service (it is an older or newer peerctl)\n", serveProtocol, req.V), Code: wire.ExitError})
		return
	}
	if req.Op != "ping" {
		// A look (serve status) is no use: it does not keep the service up.
		s.touch(1)
		defer s.touch(-1)
	}
	switch req.Op {
	case "ping":
		a := serveAnswer{PID: os.Getpid(), Outbox: s.paths.db, Status: s.status()}
		if s.storeErr != nil {
			a.OutboxError = s.storeErr.Error()
		}
		_ = writeLine(conn, a)
	case "stop":
		s.stopAsked(conn)
	case "run":
		// The client hanging up cancels the run (Ctrl-C on its side).
		ctx, cancel := context.WithCancel(s.life)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, r)
			cancel()
		}()
		_ = writeLine(conn, s.run(ctx, req))
	default:
		_ = writeLine(conn, serveAnswer{Stderr: fmt.Sprintf("peerctl: unknown request %q\n", req.Op), Code: wire.ExitError})
	}
}

// touch counts a request in (+1) or out (-1) and notes the activity.
func (s *server) touch(d int) {
	s.mu.Lock()
	s.running += d
	s.last = time.Now()
	s.mu.Unlock()
}

// served are the commands the service runs for a client.
func served(cmd *cobra.Command) bool {
	return cmd.Name() == "send" && cmd.Parent() != nil && !cmd.Parent().HasParent() ||
		cmd.Parent() != nil && cmd.Parent().Name() == "outbox" && (cmd.Name() == "cancel" || cmd.Name() == "retry")
}

// run runs req.Argv in the service as the client would have run it, with
// the client's environment and stdin, and returns what it printed.
func (s *server) run(ctx context.Context, req serveRequest) serveAnswer {
	var out, errb bytes.Buffer
	sub := s.sub(req.Env, req.Stdin, &out, &errb)
	if cmd, _, err := sub.root().Find(req.Argv); err != nil || !served(cmd) {
		return serveAnswer{Stderr: fmt.Sprintf("peerctl: the service runs send and outbox cancel|retry only, not %q\n", strings.Join(req.Argv, " ")), Code: wire.ExitUsage}
	}
	code := s.exec(ctx, sub, req.Argv)
	return serveAnswer{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// sub is a cli for one run in the service: env is the environment it
// sees, stdin its input.
func (s *server) sub(env []string, stdin string, stdout, stderr io.Writer) *cli {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	sub := newCLI(strings.NewReader(stdin), stdout, stderr, func(k string) string { return vars[k] })
	sub.environ = func() []string { return slices.Clone(env) }
	sub.srv = s
	return sub
}

// warmSet is one set of warm couriers and who holds it.
type warmSet struct {
	w    *app.Warm
	uses int       // commands running with it now
	last time.Time // when the last of them ended
}

// maxIdleWarm is how many sets of warm couriers no command uses the
// service keeps, the most recently used: each holds a running courier (a
// Claude Code process), and each distinct set of settings (harness flags,
// environment, sender name) has its own. warmIdle is how long an unused
// set is kept at most.
const (
	maxIdleWarm = 4
	warmIdle    = 15 * time.Minute
)

// warmFor returns the warm couriers for key (one set per distinct
// settings: harness flags, environment, sender name, timeout), held by
// the command c until the service lets it go (exec).
func (s *server) warmFor(c *cli, key string) *app.Warm {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.warm[key]
	if ws == nil {
		ws = &warmSet{w: app.NewWarm(s.life)}
		s.warm[key] = ws
	}
	ws.uses++
	c.warmHeld = append(c.warmHeld, key)
	return ws.w
}

// exec runs argv in sub (a cli of s.sub) and then lets go of the warm
// couriers it took, closing the sets no command needs any more
// (trimWarm).
func (s *server) exec(ctx context.Context, sub *cli, argv []string) int {
	code := sub.execute(ctx, argv)
	s.letGo(sub, time.Now())
	return code
}

// letGo lets go, at now, of the warm couriers sub took, and trims.
func (s *server) letGo(sub *cli, now time.Time) {
	s.mu.Lock()
	for _, key := range sub.warmHeld {
		if ws := s.warm[key]; ws != nil {
			ws.uses--
			ws.last = now
		}
	}
	sub.warmHeld = nil
	s.mu.Unlock()
	s.trimWarm(now)
}

// trimWarm closes the sets of warm couriers no command uses that were
// last used more than warmIdle before now, and the oldest of the others
// beyond maxIdleWarm.
func (s *server) trimWarm(now time.Time) {
	s.mu.Lock()
	var idle []string
	for key, ws := range s.warm {
		if ws.uses == 0 {
			idle = append(idle, key)
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return s.warm[b].last.Compare(s.warm[a].last) }) // newest first
	var gone []*app.Warm
	for i, key := range idle {
		if ws := s.warm[key]; i >= maxIdleWarm || now.Sub(ws.last) > warmIdle {
			gone = append(gone, ws.w)
			delete(s.warm, key)
		}
	}
	s.mu.Unlock()
	for _, w := range gone {
		_ = w.Close()
	}
}

func (s *server) closeWarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.warm {
		_ = ws.w.Close()
	}
}

// unkeyed are the variables that differ between two shells of one user
// without changing what a courier does.
var unkeyed = []string{"PWD", "OLDPWD", "SHLVL", "_", "TERM", "COLUMNS", "LINES", "TMUX_PANE", "WINDOWID", "SSH_TTY", "PEERCTL_DEBUG"}

// warmKey names the settings a courier is started with, so that a send is
// handed only to a courier its own command would have started.
func (c *cli) warmKey(opts options) string {
	h := sha256.New()
	flags := c.flagValues()
	names := make([]string, 0, len(flags))
	for k := range flags {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "flag %s=%s\x00", k, flags[k])
	}
	env := c.environ()
	sort.Strings(env)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains(unkeyed, k) {
			fmt.Fprintf(h, "env %s\x00", kv)
		}
	}
	fmt.Fprintf(h, "from %s\x00timeout %s\x00window %s", opts.from, opts.timeout, opts.receiptWindow)
	return hex.EncodeToString(h.Sum(nil))
}

// warmTransport is the graph's decoration in the service: the default
// transport sends through the warm courier of these settings.
func (c *cli) warmTransport(opts options) func(ports.Transport) ports.Transport {
	w := c.srv.warmFor(c, c.warmKey(opts))
	return w.Wrap
}

// storedSend is how the service sends a stored message again: the send's
// command line and environment, as the client gave them.
type storedSend struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// waits reports whether a stored send's command line (storedSend) asks
// to wait after the hand-over (--wait, --await-reply).
func waits(request []byte) bool {
	var req storedSend
	if json.Unmarshal(request, &req) != nil {
		return false
	}
	for _, a := range req.Argv {
		if a == "--" {
			break
		}
		for _, f := range []string{"--wait", "--await-reply"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
	}
	return false
}

// outboxJob is a stored message the service is working on in a sub cli.
type outboxJob struct {
	msg     ports.OutboxMessage
	recover bool
	// done receives the message as it stands after the job.
	done ports.OutboxMessage
	err  error
}

// claim marks message id as being worked on; false when it already is.
func (s *server) claim(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false
	}
	s.inflight[id] = true
	return true
}

func (s *server) release(id int64) {
	s.mu.Lock()
	delete(s.inflight, id)
	s.last = time.Now()
	s.mu.Unlock()
}

// poke wakes the loop.
func (s *server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop works through due messages, one at a time in id order (so in order
// per target; an attempt that waits for a take-up or a reply runs beside
// it, its address held until it is handed over), until the service ends; an interrupted attempt is checked
// (Recover) before it is attempted again. With quiet > 0 it ends the
// service once no request came for quiet and no message waits.
func (s *server) loop(quiet time.Duration) {
	t := time.NewTicker(serveTick)
	defer t.Stop()
	defer s.jobs.Wait()
	for {
		s.pass()
		s.trimWarm(time.Now())
		if quiet > 0 && s.quiet(quiet) {
			s.stop(fmt.Errorf("idle for %s with nothing to deliver (--idle-exit)", quiet))
			return
		}
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// quiet reports whether the service has been idle for d with nothing to deliver.
func (s *server) quiet(d time.Duration) bool {
	s.mu.Lock()
	idle := s.running == 0 && len(s.inflight) == 0 && time.Since(s.last) >= d
	s.mu.Unlock()
	if !idle || s.store == nil {
		return idle
	}
	pending, err := s.store.List(s.life, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}, Limit: 1})
	return err == nil && len(pending) == 0
}

// earlyEvery bounds how often a registry change makes a pass try every
// waiting message (sessions update their records every few seconds).
const earlyEvery = time.Second

// pass works through the waiting messages in id order. For each address
// (on each machine) only the oldest waiting message is tried, so messages
// to one address go in order: it is tried when due (or at once after a registry change), an
// interrupted attempt is checked; the next one to the same address is
// tried in the same pass once it has been handed over.
func (s *server) pass() {
	if s.store == nil {
		return
	}
	if n, err := s.ob.Prune(s.life); err != nil {
		fmt.Fprintf(s.c.stderr, "peerctl serve: prune the outbox: %s\n", safe(err.Error()))
	} else if n > 0 {
		fmt.Fprintf(s.c.stderr, "peerctl serve: pruned %s finished longer ago than the retention period\n", plural(n, "message"))
	}
	early := s.early.Swap(false)
	waiting, err := s.store.List(s.life, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}})
	if err != nil {
		if s.life.Err() == nil {
			fmt.Fprintf(s.c.stderr, "peerctl serve: %s\n", safe(err.Error()))
		}
		return
	}
	slices.Reverse(waiting) // oldest first
	blocked := map[string]bool{}
	now := s.now()
	for _, m := range waiting {
		if s.life.Err() != nil {
			return
		}
		target := m.Host + "\x00" + m.Address // one order per address on each machine
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
			s.jobs.Add(1)
			go func() {
				defer s.jobs.Done()
				s.job(m, false)
				s.release(m.ID)
				s.poke()
			}()
			continue
		}
		done := s.job(m, m.State == domain.OutboxDelivering)
		s.release(m.ID)
		blocked[target] = done.State.Pending() || done.State == domain.OutboxOutcomeUnknown
	}
	if early {
		// At most one early pass per earlyEvery, however often records change.
		select {
		case <-s.life.Done():
		case <-time.After(earlyEvery):
		}
	}
}

// watch has the folders of every harness's registry that svc reads
// watched, so that a session appearing wakes the loop (s.early).
func (s *server) watch(ctx context.Context, svc *app.Service) {
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
				s.poke()
			}
		}()
	}
}

// job runs one attempt (or the check of an interrupted one) of m in a sub
// cli built from m's stored command line, logs what became of it, and
// returns the message as it now stands.
func (s *server) job(m ports.OutboxMessage, recover bool) ports.OutboxMessage {
	var req storedSend
	if err := json.Unmarshal(m.Request, &req); err != nil || len(req.Argv) == 0 {
		got, _ := s.store.Move(s.life, m.ID, []domain.OutboxState{m.State}, ports.OutboxChange{State: domain.OutboxRefused, At: s.now(),
			Reason: fmt.Sprintf("its stored request cannot be read (%v)", err)})
		return got
	}
	var out, errb bytes.Buffer
	sub := s.sub(req.Env, m.Text, &out, &errb)
	j := &outboxJob{msg: m, recover: recover}
	sub.job = j
	s.exec(s.life, sub, req.Argv)
	if j.done.ID == 0 {
		// The command line ended before the job ran (a flag this peerctl no
		// longer has, say): what it printed is the reason.
		why := strings.TrimSpace(errb.String())
		if why == "" {
			why = "the stored send could not run"
		}
		j.done, j.err = s.store.Move(s.life, m.ID, []domain.OutboxState{m.State}, ports.OutboxChange{State: domain.OutboxRefused, At: s.now(), Reason: why})
	}
	if j.done.State != m.State || recover {
		fmt.Fprintf(s.c.stderr, "peerctl serve: message %d to %q: %s %s\n", m.ID, safe(outboxTarget(m.Address, m.Host)), j.done.State, safe(j.done.Reason))
	}
	return j.done
}

// printUnit prints a service definition that runs peerctl serve with
// --idle-exit=0 in this shell's environment (unitEnv): a systemd --user
// unit or a launchd LaunchAgent plist.
func (c *cli) printUnit(kind string) error {
	exe, err := c.executable()
	if err != nil {
		return fmt.Errorf("find peerctl: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	switch kind {
	case "systemd":
		fmt.Fprintf(c.stdout, `# peerctl serve as a systemd --user service:
#   peerctl serve --print-unit=systemd > ~/.config/systemd/user/peerctl.service
#   systemctl --user daemon-reload && systemctl --user enable --now peerctl
[Unit]
Description=peerctl serve: durable outbox and warm courier for coding-agent sessions

[Service]
ExecStart=%s serve --idle-exit=0
Restart=on-failure
RestartSec=2
%s
[Install]
WantedBy=default.target
`, exe, systemdEnv(c.unitEnv()))
	case "launchd":
		fmt.Fprintf(c.stdout, `<?xml version="1.0" encoding="UTF-8"?>
<!-- peerctl serve as a LaunchAgent:
       peerctl serve --print-unit=launchd > ~/Library/LaunchAgents/dev.peerctl.serve.plist
       launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.peerctl.serve.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.peerctl.serve</string>
  <key>ProgramArguments</key><array><string>%s</string><string>serve</string><string>--idle-exit=0</string></array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
%s</dict>
</plist>
`, xmlEscape(exe), launchdEnv(c.unitEnv()))
	default:
		return usageError{fmt.Errorf("--print-unit %q: want systemd or launchd", kind)}
	}
	return nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
