package app

import (
	"context"
	"time"

	"github.com/peerctl/peerctl/ports/wire"
)

// Board is where a node tells the fleet which sessions it has: its
// presence (adapters/natsbus: one key of a JetStream KV bucket).
type Board interface {
	// Publish replaces the node's presence with l (its live sessions and
	// notes) and renews its time to live. An error that names the node
	// taken by another service ends Present; any other is logged and the
	// next change or refresh publishes again.
	Publish(ctx context.Context, l wire.Listing) error
}

// presenceSettle is how long Present lets a burst of registry events
// settle before it lists: one listing for a session's several files.
const presenceSettle = 150 * time.Millisecond

// Present keeps board holding node's live sessions (Node.List of every
// harness) until ctx ends: at once, then within about a second of each
// change node.Watch reports (a session appearing, changing, ending), and
// every refresh (the board's time to live is longer) even when nothing
// changed. A watch that ends by itself (a registry that cannot be read) is
// started again a refresh later; the refreshes go on meanwhile. logf gets
// one line per failure. It returns nil when ctx ends, or the error of a
// publish that stop says ends it (a name taken).
func Present(ctx context.Context, node Node, board Board, refresh time.Duration, stop func(error) bool, logf func(string)) error {
	ctx, cancel := context.WithCancel(ctx)
	changed := make(chan struct{}, 1)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ctx.Err() == nil {
			err := node.Watch(ctx, func(wire.Event) bool {
				select {
				case changed <- struct{}{}:
				default:
				}
				return true
			}, nil)
			if err != nil && ctx.Err() == nil {
				logf("presence: watching the registries: " + err.Error() + "; the refreshes go on")
			}
			select {
			case <-ctx.Done():
			case <-time.After(refresh):
			}
		}
	}()
	defer func() {
		cancel()
		<-watchDone // every goroutine ends
	}()
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		l, err := node.List(ctx, wire.ListQuery{})
		if err == nil {
			err = board.Publish(ctx, l)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && stop(err):
			return err
		case err != nil:
			logf("presence: " + err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-changed:
			select { // let the burst settle
			case <-ctx.Done():
				return nil
			case <-time.After(presenceSettle):
			}
			select {
			case <-changed:
			default:
			}
		}
	}
}
