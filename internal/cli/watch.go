package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
)

// eventJSON is one line of `watch --json` (docs/CONFIRMATION.md).
type eventJSON struct {
	Event string `json:"event"` // appeared, gone, died, status, renamed; lost (watch --host)
	// Host is the machine the session runs on (watch --host); absent for this one.
	Host           string `json:"host,omitempty"`
	At             string `json:"at"` // when peerctl noticed it, RFC 3339 UTC
	Harness        string `json:"harness"`
	SessionID      string `json:"sessionId"`
	PID            int    `json:"pid"`
	Name           string `json:"name"`
	Status         string `json:"status"` // idle, busy, unknown
	Cwd            string `json:"cwd"`
	Endpoint       string `json:"endpoint"` // "" when not addressable
	Verdict        string `json:"verdict"`  // live; stale or reused for died; removed for gone
	Reason         string `json:"reason,omitempty"`
	File           string `json:"file"`
	Initial        bool   `json:"initial,omitempty"`
	PreviousName   string `json:"previousName,omitempty"`
	PreviousStatus string `json:"previousStatus,omitempty"`
}

func toEventJSON(ev domain.Event, at time.Time) eventJSON {
	e := ev.Entry
	r := e.Record
	out := eventJSON{Event: ev.Kind.String(), At: wire.RFC3339(at), Harness: r.Harness.String(), SessionID: r.SessionID, PID: r.PID, Name: r.Name,
		Status: r.Status.String(), Cwd: r.Cwd, Endpoint: e.Endpoint().String(), Verdict: e.Verdict.String(),
		Reason: e.Reason, File: r.File, Initial: ev.Initial}
	switch ev.Kind {
	case domain.EventRenamed:
		out.PreviousName = ev.PrevName
	case domain.EventStatus:
		out.PreviousStatus = ev.PrevStatus.String()
	}
	return out
}

func (c *cli) watchCmd() *cobra.Command {
	var asJSON bool
	var hosts []string
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream session events: appeared, gone, died, status, renamed",
		Long:  helpLong(`Print one line per session event (appeared, gone, died, status, renamed) until interrupted`, "watch"),
		Example: `  peerctl watch
  peerctl watch --json | jq -c 'select(.event == "died")'
  peerctl watch | head -1     # ends when its reader goes away
  peerctl --qwen-home ~/.qwen-work watch
  peerctl watch --host . --host dev-box --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dests, err := parseHosts(hosts, true)
			if err != nil {
				return err
			}
			c.started()
			if len(dests) > 0 {
				return c.watchHosts(cmd.Context(), dests, asJSON)
			}
			var w *app.Watcher
			fxApp, err := c.graph(options{}, &w)
			if err != nil {
				return err
			}
			return c.runWatch(cmd.Context(), fxApp, w, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event and line")
	addHostFlag(cmd, &hosts, true)
	return cmd
}

// lifecycle is the part of *fx.App the watch drives.
type lifecycle interface {
	Start(context.Context) error
	Stop(context.Context) error
}

// runWatch starts the app (the watcher's OnStart), prints events until ctx
// ends or the watch fails, then stops the app (OnStop waits for the watch).
func (c *cli) runWatch(ctx context.Context, fxApp lifecycle, w *app.Watcher, asJSON bool) (err error) {
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		return fmt.Errorf("start watch: %w", unwrapFx(err))
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if serr := fxApp.Stop(stopCtx); serr != nil && err == nil {
			err = fmt.Errorf("stop watch: %w", serr)
		}
		if werr := w.Err(); werr != nil && err == nil {
			err = werr
		}
	}()
	// Whether its reader goes or a write fails, the watch ends cleanly, exit 0.
	gone, stopOut := c.streamOut()
	defer stopOut()
	notes := w.Notes()
	octx, stopOutbox := context.WithCancel(ctx)
	defer stopOutbox()
	outboxEvents := c.watchOutbox(octx)
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
			if asJSON {
				j := watchOutboxJSON{Event: "outbox", At: outboxTime(e.At), MessageID: e.MessageID, Address: e.Address, Host: e.Host, State: e.State.String(), Reason: e.Reason}
				if err := encodeJSON(c.stdout, j, "", false); err != nil {
					return writeErr(err)
				}
			} else if _, err := fmt.Fprintln(c.stdout, outboxLine(e)); err != nil {
				return writeErr(err)
			}
		case n, ok := <-notes:
			if !ok {
				notes = nil
				continue
			}
			fmt.Fprintf(c.stderr, "peerctl: note: %s\n", n)
		case ev, ok := <-w.Events():
			if !ok {
				return nil
			}
			now := time.Now()
			if asJSON {
				if err := encodeJSON(c.stdout, toEventJSON(ev, now), "", false); err != nil {
					return writeErr(err)
				}
				continue
			}
			if _, err := fmt.Fprintln(c.stdout, eventLine(ev, now)); err != nil {
				return writeErr(err)
			}
		}
	}
}

// streamOut readies stdout for a command that writes until its reader
// goes (watch, relay): a write into a pipe nobody reads fails with EPIPE
// instead of killing peerctl by SIGPIPE (Go raises it for fd 1 and 2
// unless SIGPIPE is notified), and gone is closed once the reader has gone
// (readerGone). stop undoes both.
func (c *cli) streamOut() (gone <-chan struct{}, stop func()) {
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	gone, stopGone := readerGone(c.stdout)
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

// fit cuts s to w runes (cut) and pads it with spaces to w.
func fit(s string, w int) string {
	s = cut(s, w)
	return s + strings.Repeat(" ", w-utf8.RuneCountInString(s))
}

// eventLine renders one event for people, in columns of fixed width: time,
// event, name, session, pid, detail.
func eventLine(ev domain.Event, at time.Time) string {
	r := ev.Entry.Record
	var detail string
	switch ev.Kind {
	case domain.EventAppeared:
		detail = r.Status.String()
		if ev.Initial {
			detail += " (already running)"
		}
		if !ev.Entry.Addressable && ev.Entry.Unaddressable != "" {
			detail += "; not addressable yet: " + ev.Entry.Unaddressable
		}
	case domain.EventStatus:
		detail = ev.PrevStatus.String() + " -> " + r.Status.String()
	case domain.EventRenamed:
		detail = fmt.Sprintf("from %q", ev.PrevName)
	case domain.EventDied:
		detail = ev.Entry.Verdict.String() + ": " + ev.Entry.Reason
	case domain.EventGone:
		detail = "record " + r.File + " removed"
	}
	return fmt.Sprintf("%s  %-8s  %s  session %-*s  pid %-*d  %s", at.Format("15:04:05.000"), ev.Kind, fit(cell(r.Name), watchNameWidth),
		watchIDWidth, cell(r.SessionID), watchPIDWidth, r.PID, cell(detail))
}
