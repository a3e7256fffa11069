package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// stampLines returns w with every line begun by the time it was written,
// RFC 3339 in UTC to the millisecond, and a space: the service's log.
// Safe for concurrent use; a line written in pieces is stamped once.
func stampLines(w io.Writer) io.Writer {
	return &stampWriter{w: w, now: time.Now}
}

type stampWriter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	mid bool // the last write ended inside a line
}

// logTime is the layout of a log line's time.
const logTime = "2006-01-02T15:04:05.000Z07:00"

func (s *stampWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []byte
	for rest := p; len(rest) > 0; {
		if !s.mid {
			b = append(s.now().UTC().AppendFormat(b, logTime), ' ')
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			b, s.mid = append(b, rest...), true
			break
		}
		b, s.mid, rest = append(b, rest[:i+1]...), false, rest[i+1:]
	}
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errServeNotRunning: no service answers on the state folder's socket.
var errServeNotRunning = errors.New("no peerctl serve runs")

// askServe asks the service of this state folder (p) for op ("ping" or
// "stop") and returns the open connection and its answer; the caller
// closes conn. errServeNotRunning when none answers. A service that
// serves another state folder, or that does not say its status (an older
// peerctl), is an error naming it.
func askServe(ctx context.Context, p serve.Paths, op string) (*net.UnixConn, serve.Answer, error) {
	var a serve.Answer
	conn, err := dialUnix(p.Socket)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, a, errServeNotRunning
	}
	if err != nil {
		return nil, a, fmt.Errorf("reach peerctl serve: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := serve.WriteLine(conn, serve.Request{V: serve.Protocol, Op: op}); err != nil {
		_ = conn.Close()
		return nil, a, fmt.Errorf("ask peerctl serve on %s: %w", p.Socket, err)
	}
	if err := serve.ReadLine(bufio.NewReader(conn), &a); err != nil {
		_ = conn.Close()
		return nil, a, fmt.Errorf("ask peerctl serve on %s: no answer (%w)", p.Socket, err)
	}
	switch {
	case a.Status == nil && a.PID != 0:
		_ = conn.Close()
		return nil, a, fmt.Errorf("the peerctl serve on %s (pid %d) is an older peerctl that cannot say its status or stop on request: end it with kill %d", p.Socket, a.PID, a.PID)
	case a.Status == nil:
		_ = conn.Close()
		return nil, a, fmt.Errorf("peerctl serve on %s: %s", p.Socket, strings.TrimSpace(safe(string(a.Error))))
	case wiring.RealPath(a.Status.StateDir) != wiring.RealPath(p.StateDir):
		_ = conn.Close()
		return nil, a, fmt.Errorf("the peerctl serve on %s (pid %d) serves the state folder %s, not this one (%s): not asking it", p.Socket, a.Status.PID, a.Status.StateDir, p.StateDir)
	}
	return conn, a, nil
}

// serveCtlOptions are serve status's and serve stop's: the streams, the
// state folder's service (found with getenv), and their flags.
type serveCtlOptions struct {
	io     *iostreams
	getenv func(string) string
	// store opens the outbox (nil: none linked in, runWithStore).
	store wiring.Store
	json  bool
	// wait bounds serve stop's wait for the service's end.
	wait time.Duration
}

func newServeStatusCmd(f *factory) *cobra.Command {
	opts := &serveCtlOptions{io: f.io, getenv: f.getenv, store: f.store}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show this state folder's service: pid, uptime, messages, couriers",
		Long: helpLong("Show whether peerctl serve runs for this state folder and how it stands: pid, version, state folder, "+
			"socket, outbox, uptime, idle exit, retention, messages by state, warm couriers", "serve-status") + `

It starts nothing. Exit 0 when the service runs, 3 when none runs for this state folder (the
messages its outbox holds are still counted), 1 when it cannot be asked.`,
		Example: `  peerctl serve status
  peerctl serve status --jq .messages.stored
  peerctl serve status >/dev/null || echo "no service"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.started()
			if ran, err := f.runWithStore("peerctl serve status", storeToRead); ran {
				return err
			}
			return runServeStatus(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON on stdout")
	return cmd
}

// runServeStatus shows the service of this state folder (exit 3 when
// none runs).
func runServeStatus(ctx context.Context, opts *serveCtlOptions) error {
	p, err := serve.PathsFor(opts.getenv)
	if err != nil {
		return err
	}
	conn, a, err := askServe(ctx, p, "ping")
	var st *serve.Status
	switch {
	case errors.Is(err, errServeNotRunning):
		st = &serve.Status{StateDir: p.StateDir, Socket: p.Socket, Outbox: p.DB, Messages: serve.MessageCounts(nil)}
		if ob, absent, err := openOutbox(ctx, opts.getenv, opts.store); err != nil {
			st.OutboxError = err.Error()
		} else if !absent {
			n, err := ob.Counts(ctx)
			_ = ob.Close()
			if err != nil {
				st.OutboxError = err.Error()
			}
			st.Messages = serve.MessageCounts(n)
		}
	case err != nil:
		return err
	default:
		_ = conn.Close()
		st = a.Status
		st.Socket = p.Socket
	}
	if opts.json {
		if err := opts.io.writeJSON(st); err != nil {
			return err
		}
	} else {
		printServeStatus(opts.io.out, st)
	}
	if !st.Running {
		return silentError{wire.ExitNotLive}
	}
	return nil
}

// printServeStatus prints the service's status for people on w.
func printServeStatus(w io.Writer, st *serve.Status) {
	row := func(k, v string) { fmt.Fprintf(w, "  %-10s %s\n", k, v) }
	if !st.Running {
		fmt.Fprintf(w, "no peerctl serve runs for %s\n", safe(st.StateDir))
		row("socket", safe(st.Socket)+" (none answers)")
	} else {
		fmt.Fprintf(w, "peerctl serve runs for %s\n", safe(st.StateDir))
		row("pid", strconv.Itoa(st.PID))
		row("version", "peerctl "+safe(st.Version))
		row("socket", safe(st.Socket))
		up := time.Duration(st.UptimeSeconds) * time.Second
		row("up", fmt.Sprintf("%s, since %s", up, safe(st.StartedAt)))
		idle := "never (--idle-exit=0)"
		if st.IdleExitSeconds > 0 {
			idle = fmt.Sprintf("after %s with no request and nothing to deliver", time.Duration(st.IdleExitSeconds)*time.Second)
		}
		row("idle exit", idle)
		keep := "never: every finished message is kept (--retention=0)"
		if st.RetentionSeconds > 0 {
			keep = fmt.Sprintf("a finished message is deleted %s after its last change", time.Duration(st.RetentionSeconds)*time.Second)
		}
		row("retention", keep)
	}
	outbox := safe(st.Outbox)
	if st.OutboxError != "" {
		outbox += ": cannot be used: " + safe(st.OutboxError)
	}
	row("outbox", outbox)
	var counts []string
	for _, s := range domain.OutboxStates() {
		if n := st.Messages[s.String()]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(counts) == 0 {
		counts = []string{"none"}
	}
	row("messages", strings.Join(counts, ", "))
	if st.Running {
		row("couriers", couriersText(st.Warm))
		if b := st.Bus; b != nil {
			on := "on the bus: it carries this machine's --host nats:NODE requests"
			if !b.OnBus {
				on = "not on the bus now"
			}
			row("fleet", fmt.Sprintf("node %s at %s, %s", safe(b.Node), safe(b.Servers), on))
		}
	} else if st.Messages[domain.OutboxStored.String()]+st.Messages[domain.OutboxDelivering.String()] > 0 {
		fmt.Fprintln(w, "  messages wait for the service: peerctl serve, or any send --durable, starts it")
	}
}

// couriersText is serve status's couriers row: how many couriers are in
// use now and were started, and for how many sets of send settings
// (harness flags, --from, --timeout) the service keeps one ready.
func couriersText(w serve.Warm) string {
	if w.Started == 0 && w.InUse == 0 {
		return "none started yet"
	}
	return fmt.Sprintf("%d in use now, %d started since the service began, kept ready for %s", w.InUse, w.Started,
		domain.Count(w.Sets, "set")+" of send settings")
}

// defaultStopWait bounds how long serve stop waits for the service's end.
const defaultStopWait = 30 * time.Second

func newServeStopCmd(f *factory) *cobra.Command {
	opts := &serveCtlOptions{io: f.io, getenv: f.getenv}
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the service of this state folder cleanly and wait for its end",
		Long: helpLong("Ask peerctl serve of this state folder to stop as SIGTERM stops it, and wait until it has ended", "serve-stop") + `

What it stores stays in the outbox; a send it carries ends as a signal would end it. Exit 0 when
it stopped, or none ran (said on stderr); 1 when it has not ended within --timeout.`,
		Example: `  peerctl serve stop
  peerctl serve stop --timeout 2m
  XDG_STATE_HOME=/srv/team peerctl serve stop   # another state folder's service`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.wait <= 0 {
				return usageError{fmt.Errorf("--timeout %s: want a duration above 0, such as 30s", opts.wait)}
			}
			f.started()
			return runServeStop(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.wait, "timeout", defaultStopWait, "wait at most this long for the service to end")
	return cmd
}

// runServeStop asks the service of this state folder to stop and waits
// for its end, at most opts.wait.
func runServeStop(ctx context.Context, opts *serveCtlOptions) error {
	wait := opts.wait
	p, err := serve.PathsFor(opts.getenv)
	if err != nil {
		return err
	}
	// Look first: a service of another state folder is not asked to stop.
	conn, _, err := askServe(ctx, p, "ping")
	if errors.Is(err, errServeNotRunning) {
		fmt.Fprintf(opts.io.errOut, "peerctl: no peerctl serve runs for %s: nothing to stop\n", safe(p.StateDir))
		return nil
	}
	if err != nil {
		return err
	}
	_ = conn.Close()
	conn, a, err := askServe(ctx, p, "stop")
	if errors.Is(err, errServeNotRunning) {
		fmt.Fprintf(opts.io.errOut, "peerctl: no peerctl serve runs for %s: nothing to stop\n", safe(p.StateDir))
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	pid := a.Status.PID
	// The service keeps this connection open until it has ended.
	if _, err := io.Copy(io.Discard, conn); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("peerctl serve (pid %d) was asked to stop and has not ended within %s: it may still be ending a send; "+
			"kill %d ends it at once (a hand-over it cuts off is checked at its next start)", pid, wait, pid)
	}
	fmt.Fprintf(opts.io.out, "peerctl serve (pid %d) for %s stopped\n", pid, safe(p.StateDir))
	return nil
}
