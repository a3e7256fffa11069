package cli

import (
	"context"
	"fmt"
	"time"

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

// watchOutbox follows the outbox's history (read-only) from now on and
// sends every change on the channel until ctx ends; an outbox that does
// not exist yet is waited for (then followed from its first change). It
// reads nothing when the state folder (found with getenv) cannot be named,
// nor without a store (peerctl runs watch as peerctl-mcp: runWithStore).
func watchOutbox(ctx context.Context, getenv func(string) string, store wiring.Store) <-chan ports.OutboxEvent {
	out := make(chan ports.OutboxEvent, 64)
	p, err := serve.PathsFor(getenv)
	if err != nil || store == nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		var st ports.Outbox
		defer func() {
			if st != nil {
				_ = st.Close()
			}
		}()
		after, first := int64(0), true
		t := time.NewTicker(outboxPoll)
		defer t.Stop()
		for {
			if st == nil {
				if s, err := store.OpenReadOnly(ctx, p.DB); err == nil {
					st = s
					if first {
						after, _ = st.LastEvent(ctx)
					}
				}
				first = false
			}
			if st != nil {
				evs, err := st.Events(ctx, after, 256)
				if err == nil {
					for _, e := range evs {
						select {
						case out <- e:
						case <-ctx.Done():
							return
						}
						after = e.Seq
					}
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
	if e.Reason != "" {
		line += ": " + cell(e.Reason)
	}
	if cmd := approveCommand(e); cmd != "" {
		line += fmt.Sprintf(" (waits for approval: %s, or peerctl outbox deny %d)", cmd, e.MessageID)
	}
	return line
}
