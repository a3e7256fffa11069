package natsbus

import (
	"context"
	"reflect"
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
	// gen counts the changes of what Listing gives; built is its
	// listing for gen (nil: not built since the last change).
	gen   uint64
	built *wire.Listing
}

// KeepFleet keeps v up to date with every node's presence until ctx ends
// or the watch ends (followBucket: host_unreachable when the connection
// ended); v is not ready (Listing) from then on.
func (b *Bus) KeepFleet(ctx context.Context, v *FleetView, notes func(string)) error {
	v.mu.Lock()
	v.bus, v.parts, v.revs, v.over, v.ready = b, map[string]wire.Listing{}, map[string]uint64{}, false, false
	v.changed()
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.parts, v.ready = nil, false
		v.changed()
		v.mu.Unlock()
	}()
	return b.followBucket(ctx, func(e jetstream.KeyValueEntry) {
		var part wire.Listing
		if e != nil && e.Operation() == jetstream.KeyValuePut {
			part = nodePart(e.Key(), e.Value())
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		switch was, known := v.parts[keyOf(e)]; {
		case e == nil:
			v.ready = true
		case e.Operation() != jetstream.KeyValuePut:
			delete(v.parts, e.Key())
			delete(v.revs, e.Key())
		case known && reflect.DeepEqual(was, part):
			// A refresh: the same part (its document's time aside), newer.
			v.revs[e.Key()] = e.Revision()
			return
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
			v.parts[e.Key()], v.revs[e.Key()] = part, e.Revision()
		}
		v.changed()
	}, notes)
}

// changed says what Listing gives may have changed (v.mu held).
func (v *FleetView) changed() { v.gen, v.built = v.gen+1, nil }

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
	l, _, ok = v.Snapshot()
	return l, ok
}

// Snapshot is Listing and the view's generation gen, which changes
// whenever the listing may have (a node's presence changed, came, left;
// the watch began or ended), and not on a refresh of the same presence:
// what is made of a listing can be kept while gen stays. The listing is
// built once a generation and shared: read it, never change it.
func (v *FleetView) Snapshot() (l wire.Listing, gen uint64, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready || !v.bus.Connected() {
		return wire.Listing{}, v.gen, false
	}
	if v.built == nil {
		b := v.build()
		v.built = &b
	}
	return *v.built, v.gen, true
}

// build is the view's listing (v.mu held).
func (v *FleetView) build() wire.Listing {
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
	return out
}
