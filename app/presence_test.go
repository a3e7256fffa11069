package app

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// watchedNode is a Node whose sessions are set by the test and whose watch
// reports each change the test makes.
type watchedNode struct {
	Node
	mu       sync.Mutex
	sessions []wire.Session
	events   chan struct{}
}

func (n *watchedNode) set(names ...string) {
	n.mu.Lock()
	n.sessions = nil
	for _, name := range names {
		n.sessions = append(n.sessions, wire.Session{Name: name})
	}
	n.mu.Unlock()
	n.events <- struct{}{}
}

func (n *watchedNode) List(context.Context, wire.ListQuery) (wire.Listing, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return wire.Listing{Sessions: append([]wire.Session(nil), n.sessions...)}, nil
}

func (n *watchedNode) Watch(ctx context.Context, events func(wire.Event) bool, _ func(string)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.events:
			events(wire.Event{})
		}
	}
}

// board records what was published, and can refuse.
type board struct {
	got    chan []string
	mu     sync.Mutex
	refuse error
}

func (b *board) Publish(_ context.Context, l wire.Listing) error {
	var names []string
	for _, s := range l.Sessions {
		names = append(names, s.Name)
	}
	b.got <- names
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refuse
}

// next is the next publish, waited for at most a minute.
func (b *board) next(t *testing.T) []string {
	t.Helper()
	select {
	case names := <-b.got:
		return names
	case <-time.After(time.Minute):
		t.Fatal("nothing published")
		return nil
	}
}

func TestPresentPublishesAtOnceOnEachChangeAndOnRefresh(t *testing.T) {
	n := &watchedNode{events: make(chan struct{}, 1)}
	b := &board{got: make(chan []string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Present(ctx, n, b, time.Hour, func(error) bool { return false }, func(string) {})
	}()
	assert.Empty(t, b.next(t), "at once, with no session yet")
	n.set("proj")
	assert.Equal(t, []string{"proj"}, b.next(t), "a change is pushed, not left to the hourly refresh")
	n.set("proj", "api")
	assert.Equal(t, []string{"proj", "api"}, b.next(t))
	cancel()
	require.NoError(t, <-done)
}

func TestPresentRefreshesWithoutChanges(t *testing.T) {
	n := &watchedNode{events: make(chan struct{}, 1)}
	b := &board{got: make(chan []string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = Present(ctx, n, b, 10*time.Millisecond, func(error) bool { return false }, func(string) {})
	}()
	for range 3 {
		b.next(t) // no change made: the refreshes publish
	}
}

func TestPresentEndsOnATakenNameAndLogsOtherFailures(t *testing.T) {
	taken := errors.New("node name taken")
	b := &board{got: make(chan []string, 16), refuse: errors.New("bus down")}
	n := &watchedNode{events: make(chan struct{}, 1)}
	var logged []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var mu sync.Mutex
	go func() {
		done <- Present(ctx, n, b, 10*time.Millisecond, func(err error) bool { return errors.Is(err, taken) }, func(l string) {
			mu.Lock()
			logged = append(logged, l)
			mu.Unlock()
		})
	}()
	b.next(t)
	b.next(t) // a failure that is not a taken name: it goes on
	mu.Lock()
	assert.Contains(t, logged, "presence: bus down")
	mu.Unlock()
	b.mu.Lock()
	b.refuse = taken
	b.mu.Unlock()
	for {
		select {
		case err := <-done:
			require.ErrorIs(t, err, taken)
			return
		case <-b.got:
		case <-time.After(time.Minute):
			t.Fatal("Present did not end on a taken name")
		}
	}
}
