package natsbus

import (
	"context"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/ports/wire"
)

// FleetView is a live view of every node's presence, kept from one watch
// of the whole bucket (Bus.KeepFleet, pushed: no node is asked): what
// Bus.Fleet reads, without reading the bucket again. Safe for concurrent
// use; the zero value is ready to keep.
type FleetView struct {
	mu    sync.Mutex
	bus   *Bus
	parts map[string]wire.Listing // each node's part (nodePart), by name
	revs  map[string]uint64       // each node's last revision: its age
	over  bool                    // more than MaxNodes nodes: the least recently updated left out
	ready bool                    // every value there at the start has come
}

// KeepFleet keeps v up to date with every node's presence until ctx ends
// or the watch ends (followBucket: host_unreachable when the connection
// ended); v is not ready (Listing) from then on.
func (b *Bus) KeepFleet(ctx context.Context, v *FleetView, notes func(string)) error {
	v.mu.Lock()
	v.bus, v.parts, v.revs, v.over, v.ready = b, map[string]wire.Listing{}, map[string]uint64{}, false, false
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.parts, v.ready = nil, false
		v.mu.Unlock()
	}()
	return b.followBucket(ctx, func(e jetstream.KeyValueEntry) {
		v.mu.Lock()
		defer v.mu.Unlock()
		switch _, known := v.parts[keyOf(e)]; {
		case e == nil:
			v.ready = true
		case e.Operation() != jetstream.KeyValuePut:
			delete(v.parts, e.Key())
			delete(v.revs, e.Key())
		default:
			if !known && len(v.parts) >= maxNodes { // as Bus.Fleet: the least recently updated is left out
				oldest := ""
				for n, rev := range v.revs {
					if oldest == "" || rev < v.revs[oldest] {
						oldest = n
					}
				}
				delete(v.parts, oldest)
				delete(v.revs, oldest)
				v.over = true
			}
			v.parts[e.Key()], v.revs[e.Key()] = nodePart(e.Key(), e.Value()), e.Revision()
		}
	}, notes)
}

// keyOf is e's key ("" for the nil entry).
func keyOf(e jetstream.KeyValueEntry) string {
	if e == nil {
		return ""
	}
	return e.Key()
}

// Listing is every node's presence as Bus.Fleet gives it (the same
// rule: nodePart, in node name order), from the view; ok is false while
// the view is not ready or its connection to the bus is away.
func (v *FleetView) Listing() (l wire.Listing, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready || !v.bus.Connected() {
		return wire.Listing{}, false
	}
	out := wire.Listing{Sessions: []wire.Session{}}
	if v.over {
		out.Partial = true
		out.Notes = append(out.Notes, tooManyNodes)
	}
	nodes := make([]string, 0, len(v.parts))
	for n := range v.parts {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		out = addNode(out, v.parts[n])
	}
	return out, true
}
