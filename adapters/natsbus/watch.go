package natsbus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// watchPing is how often a watch pings the bus: a bus that leaves three
// pings unanswered (about 45 s, as ssh's keepalive) ends the watch.
var watchPing = 15 * time.Second

// Watch follows the node's presence (its key in PresenceBucket, pushed by
// its service within about a second of a change, and refreshed): its live
// sessions first (Initial appeared events), then each change between two
// of its presences as the event `watch` prints — appeared, gone (a
// session no longer in it: ended, or no longer live; its verdict
// "removed"), renamed, status — each given its host and its endpoint in
// the nats:v1: form, the presence read as list --fleet reads it (a
// session it may not hold left out with a note). It returns nil when ctx
// ends or events says stop; otherwise host_unreachable, with why: the
// node is not on the bus, it left (its service stopped, or its presence
// expired), the bus connection ended or the bus stopped answering (no
// reply to the connection's pings, every watchPing, for three of them),
// its presence is not this build's.
func (n *Node) Watch(ctx context.Context, events func(wire.Event) bool, notes func(string)) error {
	s := n.s
	if s.Name == "" {
		s.Name = "peerctl watch --host " + n.dest.String()
	}
	s.PingInterval = watchPing
	bus, err := Connect(s, false)
	if err != nil {
		return domain.Refuse(domain.ReasonHostUnreachable, "%s: the fleet's bus: %s", n.dest, wire.Safe(err.Error()))
	}
	defer bus.Close()
	start, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	kv, err := bus.presence(start, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return domain.Refuse(domain.ReasonHostUnreachable, "node %s is not on the fleet's bus (no node has joined it yet)", n.node)
	}
	if err != nil {
		return domain.Refuse(domain.ReasonHostUnreachable, "%s: the fleet's bus: %s", n.dest, wire.Safe(err.Error()))
	}
	w, err := kv.Watch(ctx, n.node)
	if err != nil {
		return domain.Refuse(domain.ReasonHostUnreachable, "%s: watch its presence: %s", n.dest, wire.Safe(err.Error()))
	}
	defer func() { _ = w.Stop() }()
	stale := 3 * watchPing // nats.go's MaxPingsOut (2) and one more
	alive := time.NewTicker(time.Second)
	defer alive.Stop()
	var last map[string]wire.Session // nil until its first presence
	for {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return nil
		case <-alive.C:
			if bus.nc.IsClosed() && errors.Is(bus.nc.LastError(), nats.ErrStaleConnection) {
				return domain.Refuse(domain.ReasonHostUnreachable, "%s: the fleet's bus does not answer (no reply to a ping for %s); node %s's state there is not known", n.dest, stale, n.node)
			}
			if bus.nc.IsClosed() {
				return domain.Refuse(domain.ReasonHostUnreachable, "%s: the connection to the fleet's bus ended", n.dest)
			}
			continue
		case e = <-w.Updates():
		}
		switch {
		case e == nil && last == nil: // every value there has come: none
			return domain.Refuse(domain.ReasonHostUnreachable, "node %s is not on the fleet's bus: no presence (its peerctl serve --nats is not running or not joined; peerctl list --fleet shows the live nodes)", n.node)
		case e == nil:
			continue
		case e.Operation() != jetstream.KeyValuePut:
			return domain.Refuse(domain.ReasonHostUnreachable, "node %s left the fleet's bus (its service stopped, or its presence was not refreshed for %s)", n.node, TTL)
		}
		d, err := ReadDoc(e.Key(), e.Value())
		if err != nil {
			return wire.Broken(n.dest, err)
		}
		initial := last == nil
		cur, skipped := nodeSessions(d)
		if initial {
			for _, note := range skipped {
				if notes != nil {
					notes(note)
				}
			}
		}
		var changes []wire.Event
		last, changes = diff(d.Node, last, cur, wire.RFC3339(time.Now()), initial)
		for _, ev := range changes {
			if !events(ev) {
				return nil
			}
		}
	}
}
