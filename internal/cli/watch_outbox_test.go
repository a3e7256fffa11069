package cli

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// historyOutbox is an outbox whose history is events (Events and Close
// only; the rest of ports.Outbox is not called).
type historyOutbox struct {
	ports.Outbox
	mu     sync.Mutex
	events []ports.OutboxEvent
}

func (h *historyOutbox) Events(_ context.Context, after int64, limit int) ([]ports.OutboxEvent, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ports.OutboxEvent
	for _, e := range h.events {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (h *historyOutbox) Close() error { return nil }

// A watch shows the outbox's changes from its own start: one made after
// it began but before the outbox was first read (the send that stored it
// ran while the watch was starting) is shown; one from before it began,
// and the history before that (more than a page of it), are not.
func TestWatchOutboxFromItsStart(t *testing.T) {
	since := time.Now()
	h := &historyOutbox{}
	for i := range outboxPage + 10 {
		at := since.Add(-time.Hour + time.Duration(i)*time.Second)
		h.events = append(h.events, ports.OutboxEvent{Seq: int64(i + 1), MessageID: int64(i + 1), At: at, Last: at, State: domain.OutboxDelivered, Count: 1})
	}
	folded := since.Add(-time.Minute) // a change folded into one of before the start: its latest is after
	h.events = append(h.events,
		ports.OutboxEvent{Seq: outboxPage + 11, MessageID: 500, At: folded, Last: since.Add(time.Millisecond), State: domain.OutboxStored, Count: 2},
		ports.OutboxEvent{Seq: outboxPage + 12, MessageID: 501, Address: "absent", At: since.Add(time.Millisecond), Last: since.Add(time.Millisecond), State: domain.OutboxStored, Count: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := make(chan struct{})
	events := followOutbox(ctx, func(context.Context) (ports.Outbox, error) { close(opened); return h, nil }, since)
	var got []int64
	for len(got) < 2 {
		select {
		case e := <-events:
			got = append(got, e.MessageID)
		case <-time.After(time.Minute):
			require.FailNow(t, "no event", "got %v", got)
		}
	}
	assert.Equal(t, []int64{500, 501}, got)

	<-opened
	h.mu.Lock()
	h.events = append(h.events, ports.OutboxEvent{Seq: outboxPage + 13, MessageID: 501, At: time.Now(), Last: time.Now(), State: domain.OutboxDelivered, Count: 1})
	h.mu.Unlock()
	select {
	case e := <-events:
		assert.Equal(t, ports.OutboxEvent{Seq: outboxPage + 13, MessageID: 501, At: e.At, Last: e.Last, State: domain.OutboxDelivered, Count: 1}, e, "a later change follows")
	case <-time.After(time.Minute):
		require.FailNow(t, "the later change was not followed")
	}
}
