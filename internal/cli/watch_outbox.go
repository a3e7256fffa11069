package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// outboxPoll is how often watch reads the outbox's history.
const outboxPoll = 500 * time.Millisecond

// watchOutboxJSON is a `watch --json` line about a durable message
// (docs/CONFIRMATION.md): event "outbox".
type watchOutboxJSON struct {
	Event     string `json:"event"` // "outbox"
	At        string `json:"at"`    // when the change happened, RFC 3339 UTC
	MessageID int64  `json:"messageId"`
	Address   string `json:"address"`
	Host      string `json:"host,omitempty"` // another machine (send --durable --host)
	State     string `json:"state"`
	Reason    string `json:"reason,omitempty"`
	// Approve is the command that approves a message awaiting approval
	// ("peerctl outbox approve 7"); absent otherwise.
	Approve string `json:"approve,omitempty"`
}

// approveCommand is the command that approves message e is about, when
// e is its hold ("" otherwise).
func approveCommand(e ports.OutboxEvent) string {
	if e.State != domain.OutboxAwaitingApproval {
		return ""
	}
	return fmt.Sprintf("peerctl outbox approve %d", e.MessageID)
}

// watchOutbox follows the outbox's history (read-only) from now on, the
// watch's start, and sends every change on the channel until ctx ends; an
// outbox that does not exist yet is waited for. It reads nothing when the
// state folder (found with getenv) cannot be named, nor without a store
// (peerctl runs watch as peerctl-mcp: runWithStore).
func watchOutbox(ctx context.Context, getenv func(string) string, store wiring.Store) <-chan ports.OutboxEvent {
	since := time.Now()
	p, err := serve.PathsFor(getenv)
	if err != nil || store == nil {
		out := make(chan ports.OutboxEvent)
		close(out)
		return out
	}
	return followOutbox(ctx, func(ctx context.Context) (ports.Outbox, error) { return store.OpenReadOnly(ctx, p.DB) }, since)
}

// outboxPage is how many changes followOutbox reads at once.
const outboxPage = 256

// followOutbox sends on the channel every change of the outbox open
// opens (tried again every outboxPoll until it opens) that happened at
// or after since, in order, and then each new one, until ctx ends. The
// changes are chosen by their time, not by what the history held when
// the outbox was first opened: a change made after since but before that
// open (the outbox's file opened a moment after the watch began, or
// created by the send) is not lost.
func followOutbox(ctx context.Context, open func(context.Context) (ports.Outbox, error), since time.Time) <-chan ports.OutboxEvent {
	out := make(chan ports.OutboxEvent, 64)
	go func() {
		defer close(out)
		var st ports.Outbox
		defer func() {
			if st != nil {
				_ = st.Close()
			}
		}()
		after := int64(0)
		t := time.NewTicker(outboxPoll)
		defer t.Stop()
		for {
			if st == nil {
				if s, err := open(ctx); err == nil {
					st = s
				}
			}
			for st != nil {
				evs, err := st.Events(ctx, after, outboxPage)
				if err != nil {
					break
				}
				for _, e := range evs {
					after = e.Seq
					if e.At.Before(since) && e.Last.Before(since) {
						continue // before the watch began
					}
					select {
					case out <- e:
					case <-ctx.Done():
						return
					}
				}
				if len(evs) < outboxPage {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// outboxLine renders an outbox change for people, beside the session events.
func outboxLine(e ports.OutboxEvent) string {
	line := fmt.Sprintf("%s  %-8s  message %d to %q: %s", e.At.Local().Format("15:04:05.000"), "outbox", e.MessageID, cell(outboxTarget(e.Address, e.Host)), e.State)
	reason := e.Reason
	if e.State == domain.OutboxAwaitingApproval {
		// The reason's hint once, with the commands (no second copy).
		hint := app.ApproveHint(e.MessageID)
		switch r, ok := strings.CutSuffix(reason, app.HeldHint); {
		case ok:
			reason = r + hint
		case reason == "":
			reason = hint
		default:
			reason += "; " + hint
		}
	}
	if reason != "" {
		line += ": " + cell(reason)
	}
	return line
}
