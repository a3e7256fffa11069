package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// watchOptions are watch's request and what it needs: the streams, the
// nodes of the hosts, and the outbox's changes.
type watchOptions struct {
	io    *iostreams
	nodes func([]domain.Dest) ([]app.Node, error)
	// outbox follows this machine's outbox until ctx ends (watchOutbox).
	outbox func(ctx context.Context) <-chan ports.OutboxEvent
	dests  []domain.Dest
	// fleet follows every node's presence on the fleet's bus (nil: none;
	// wiring.Bus.Watch).
	fleet func(ctx context.Context, events func(wire.Event) bool, notes func(string)) error
	json  bool
}

func newWatchCmd(f *factory) *cobra.Command {
	opts := &watchOptions{io: f.io, nodes: f.watchNodes, outbox: func(ctx context.Context) <-chan ports.OutboxEvent { return watchOutbox(ctx, f.getenv, f.store) }}
	var hosts []string
	var fleet bool
	var bus busFlags
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream session events: appeared, gone, died, status, renamed",
		Long: helpLong(`Print one line per session event (appeared, gone, died, status, renamed) until interrupted; `+
			`also each change of peerctl serve's outbox (outbox), and with --host a machine whose watch ended (lost), then exit 10; `+
			`with --fleet every node's sessions on the fleet's bus, a node that left (left)`, "watch"),
		Example: `  peerctl watch
  peerctl watch --jq 'select(.event == "died")'
  peerctl watch | head -1     # ends when its reader goes away
  peerctl --qwen-home ~/.qwen-work watch
  peerctl watch --host . --host dev-box --json
  peerctl watch --fleet --nats nats://bus-1:4222   # every node on the bus`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.dests, err = parseHosts(hosts, true); err != nil {
				return err
			}
			settings, ok, err := busSettings(cmd, f.getenv, f.bus, bus, "peerctl watch")
			switch {
			case err != nil:
				return err
			case fleet && !ok:
				return usageError{fmt.Errorf("--fleet: no bus: give --nats URL[,URL...] or set $%s", natsEnv)}
			case !fleet && cmd.Flags().Changed("nats") && !slices.ContainsFunc(opts.dests, isNode):
				return usageError{errors.New("--nats: give --fleet or --host nats:NODE too (watch reads the bus only for those)")}
			case fleet && f.bus == nil:
				return f.runWithBus("watch --fleet")
			case fleet:
				// Per-node credentials allow the replies' inbox of this
				// machine's node only.
				if settings.Node, err = f.nodeName(nil, busFlags{}); err != nil {
					return err
				}
				opts.fleet = func(ctx context.Context, events func(wire.Event) bool, notes func(string)) error {
					return f.bus.Watch(ctx, settings, events, notes)
				}
			}
			if ok {
				f.listNATS = &settings // --host nats:NODE's bus
			}
			f.started()
			return runWatch(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per event and line")
	addHostFlag(cmd, &hosts, true)
	cmd.Flags().BoolVar(&fleet, "fleet", false, "watch every node's sessions on the fleet's bus (host nats:NODE; docs/FLEET.md); with --host, merged")
	addBusFlags(cmd, &bus, false)
	return cmd
}

// nodeItem is one event of a watch over nodes, or a node's end.
type nodeItem struct {
	ev   wire.Event
	end  bool
	host domain.Dest
	// fleet: the end is the fleet's bus's (watch --fleet), not a node's.
	fleet bool
	err   error // on a node's end: why its watch ended (nil: ctx ended)
}

// runWatch watches opts.dests (this machine alone when none) through their
// nodes (Node.Watch), all at once, printing their events as they come,
// with the outbox's when this machine is watched, in one printer
// (printEvent; a host column when hosts were named). This machine alone:
// the watch ends with its error (exit 1 when the registry cannot be read
// any more), exit 0 on a signal or when stdout's reader goes. Over hosts,
// a node whose watch ends is a "lost" event, then the whole watch ends:
// exit 10 (host_unreachable), never silence.
func runWatch(ctx context.Context, opts *watchOptions) error {
	dests, ios, asJSON := opts.dests, opts.io, opts.json
	withHost := len(dests) > 0 || opts.fleet != nil
	if len(dests) == 0 && opts.fleet == nil {
		dests = []domain.Dest{{}}
	}
	nodes, err := opts.nodes(dests)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan nodeItem)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	send := func(it nodeItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	local := false
	for _, n := range nodes {
		host := n.Host()
		local = local || host.IsLocal()
		wg.Go(func() {
			err := n.Watch(ctx, func(ev wire.Event) bool { return send(nodeItem{ev: ev}) }, func(note string) { printWatchNote(ios.errOut, host, note) })
			send(nodeItem{end: true, host: host, err: err})
		})
	}
	if opts.fleet != nil {
		wg.Go(func() {
			err := opts.fleet(ctx, func(ev wire.Event) bool { return send(nodeItem{ev: ev}) }, func(note string) {
				fmt.Fprintf(ios.errOut, "peerctl: %s\n", safe(clipText(note, 2000)))
			})
			if err == nil && ctx.Err() == nil {
				err = domain.Refuse(domain.ReasonHostUnreachable, "the watch of the fleet's bus ended")
			}
			send(nodeItem{end: true, fleet: true, err: err})
		})
	}
	var outboxEvents <-chan ports.OutboxEvent
	if local {
		octx, stopOutbox := context.WithCancel(ctx)
		defer stopOutbox()
		outboxEvents = opts.outbox(octx)
	}
	gone, stopOut := ios.streamOut()
	defer stopOut()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-gone:
			return nil
		case e, ok := <-outboxEvents:
			if !ok {
				outboxEvents = nil
				continue
			}
			if err := printOutboxEvent(ios, e, asJSON); err != nil {
				return writeErr(err)
			}
		case it := <-items:
			if !it.end {
				if err := printEvent(ios, it.ev, asJSON, withHost); err != nil {
					return writeErr(err)
				}
				continue
			}
			if !withHost || (it.err == nil && ctx.Err() != nil) {
				return it.err
			}
			lost, err := lostEvent(it.host, it.err)
			if it.fleet {
				lost.Host = fleetHost
			}
			if perr := printEvent(ios, lost, asJSON, withHost); perr != nil {
				return writeErr(perr)
			}
			return err
		}
	}
}

// fleetHost is the host of the "lost" event of watch --fleet: the
// fleet's bus, every node.
const fleetHost = "nats:*"

// lostEvent is the "lost" event of host's watch, ended by err (nil: it
// ended by itself), and the error the watch ends with: a host_unreachable
// refusal, exit 10, when err is none already.
func lostEvent(host domain.Dest, err error) (wire.Event, error) {
	if err == nil {
		err = fmt.Errorf("%s's watch ended", app.Where(host))
	}
	if _, ok := domain.AsRefusal(err); !ok && !host.IsLocal() {
		err = &domain.Refusal{Reason: domain.ReasonHostUnreachable, Detail: err.Error(), Err: err}
	}
	return wire.Event{Event: wire.EventLost, At: wire.RFC3339(time.Now()), Host: host.String(), Reason: err.Error()}, err
}

// printWatchNote prints a node's note on stderr, escaped: "peerctl: note:
// NOTE" for this machine's, "peerctl: DEST: NOTE" for a host's.
func printWatchNote(w io.Writer, host domain.Dest, note string) {
	if host.IsLocal() {
		fmt.Fprintf(w, "peerctl: note: %s\n", safe(note))
		return
	}
	fmt.Fprintf(w, "peerctl: %s: %s\n", host, safe(clipText(note, 2000)))
}

// printOutboxEvent prints one change of the outbox as watch does.
func printOutboxEvent(ios *iostreams, e ports.OutboxEvent, asJSON bool) error {
	if asJSON {
		j := watchOutboxJSON{Event: "outbox", At: wire.RFC3339(e.At), MessageID: e.MessageID, Address: e.Address, Host: e.Host, State: e.State.String(), Reason: e.Reason,
			Approve: approveCommand(e)}
		return ios.writeJSONLine(j)
	}
	_, err := fmt.Fprintln(ios.out, outboxLine(e))
	return err
}

// printEvent prints one event: its document as watch --json prints it, or
// a line for people (eventText).
func printEvent(ios *iostreams, ev wire.Event, asJSON, withHost bool) error {
	if asJSON {
		return ios.writeJSONLine(ev)
	}
	_, err := fmt.Fprintln(ios.out, eventText(ev, withHost, ios.tableWidth()))
	return err
}

// streamOut readies stdout for a command that writes until its reader
// goes (watch, relay): a write into a pipe nobody reads fails with EPIPE
// instead of killing peerctl by SIGPIPE (Go raises it for fd 1 and 2
// unless SIGPIPE is notified), and gone is closed once the reader has gone
// (readerGone). stop undoes both.
func (s *iostreams) streamOut() (gone <-chan struct{}, stop func()) {
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	gone, stopGone := readerGone(s.out)
	return gone, func() { stopGone(); signal.Stop(sigpipe) }
}

// writeErr is nil when the reader of stdout has gone (EPIPE: the watch
// ends as asked, exit 0), else the write's error.
func writeErr(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return fmt.Errorf("write event: %w", err)
}

// Widths of watch's text columns: a stream cannot be aligned by looking
// ahead (tabwriter), so each column has a fixed width; a longer name is
// cut with "…", a longer session id or pid only pushes its line.
const (
	watchNameWidth = 16
	watchIDWidth   = 36 // a UUID, as both harnesses write session ids
	watchPIDWidth  = 7
)

// fit cuts s to w terminal columns (cut) and pads it with spaces to w.
func fit(s string, w int) string {
	s = cut(s, w)
	return s + strings.Repeat(" ", w-shownWidth(s))
}

// eventText renders one event for people, in columns of fixed width:
// time (local), event, the host (withHost: "." for this machine), name,
// session, pid, detail; a "lost" event names its host and why. With a
// width (a terminal's: iostreams.tableWidth) the session is its id's
// first domain.ShortIDLen characters with no label, as list shows it,
// and the line is cut to width; without one (a pipe, a file) the line is
// whole.
func eventText(ev wire.Event, withHost bool, width int) string {
	line := eventLine(ev, withHost, width > 0)
	if width > 0 {
		line = cut(line, width)
	}
	return line
}

// eventLine is eventText's line, the session id short when short.
func eventLine(ev wire.Event, withHost, short bool) string {
	at, _ := time.Parse(time.RFC3339Nano, ev.At)
	when := at.Local().Format("15:04:05.000")
	host := ""
	if withHost {
		h := ev.Host
		if h == "" {
			h = localHost
		}
		if ev.Event == wire.EventLost || ev.Event == wire.EventLeft {
			return fmt.Sprintf("%s  %-8s  host %s: %s", when, ev.Event, cell(h), cell(ev.Reason))
		}
		host = fit(cell(h), watchNameWidth) + "  "
	}
	var detail string
	switch ev.Event {
	case domain.EventAppeared.String():
		detail = domain.StatusText(ev.Status, ev.WaitingFor)
		if ev.Initial {
			detail += " (already running)"
		}
		if ev.Unaddressable != "" {
			detail += "; not addressable yet: " + ev.Unaddressable
		}
	case domain.EventStatus.String():
		detail = ev.PreviousStatus + " -> " + domain.StatusText(ev.Status, ev.WaitingFor)
	case domain.EventRenamed.String():
		detail = fmt.Sprintf("from %q", ev.PreviousName)
	case domain.EventDied.String():
		detail = ev.Verdict + ": " + ev.Reason
	case domain.EventGone.String():
		detail = "record " + ev.File + " removed"
	}
	session := fmt.Sprintf("session %-*s", watchIDWidth, cell(ev.SessionID))
	if short {
		session = fit(runewidth.Truncate(cell(ev.SessionID), domain.ShortIDLen, ""), domain.ShortIDLen)
	}
	return fmt.Sprintf("%s  %-8s  %s%s  %s  pid %-*d  %s", when, ev.Event, host, fit(cell(ev.Name), watchNameWidth),
		session, watchPIDWidth, ev.PID, cell(detail))
}
