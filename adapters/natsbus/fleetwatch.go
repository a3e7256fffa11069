package natsbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// nodeSessions are the sessions of d (a document ReadDoc read) as list
// --fleet gives them: each that checkSession lets through, with Host
// "nats:NODE" and its endpoint in the nats:v1: form; skipped says, for
// each left out, "node NODE: warning: session ID left out: WHY".
func nodeSessions(d Doc) (sessions []wire.Session, skipped []string) {
	dest, _ := domain.NodeDest(d.Node) // ReadDoc checked it
	for _, s := range d.Sessions {
		if err := checkSession(s); err != nil {
			skipped = append(skipped, "node "+d.Node+": "+wire.SkipNote("session", s.SessionID, err))
			continue
		}
		s.Host, s.Endpoint = dest.String(), domain.HostEndpoint(dest, s.Endpoint)
		sessions = append(sessions, s)
	}
	return sessions, skipped
}

// nodeView is one node's sessions as a watch last saw them, by
// sessionKey.
type nodeView map[string]wire.Session

// sessionKey is what makes a session the same one in two presences: its
// harness, id and pid.
func sessionKey(s wire.Session) string {
	return fmt.Sprintf("%s\x00%s\x00%d", s.Harness, s.SessionID, s.PID)
}

// diff is the rule of a watch over presence: the events between a node's
// sessions as last seen (nil: none yet) and cur (nodeSessions), noticed
// at at — appeared (initial: Initial), renamed, status, and gone for a
// session no longer there (its verdict "removed": ended, or not live;
// presence holds live sessions only) — and cur as the view to compare
// the next presence with.
func diff(node string, last nodeView, cur []wire.Session, at string, initial bool) (nodeView, []wire.Event) {
	next := nodeView{}
	var changes []wire.Event
	for _, ses := range cur {
		k := sessionKey(ses)
		next[k] = ses
		prev, had := last[k]
		switch {
		case !had:
			changes = append(changes, eventOf(domain.EventAppeared.String(), ses, at, initial))
		case prev.Name != ses.Name:
			ev := eventOf(domain.EventRenamed.String(), ses, at, false)
			ev.PreviousName = prev.Name
			changes = append(changes, ev)
		case prev.Status != ses.Status || prev.WaitingFor != ses.WaitingFor:
			ev := eventOf(domain.EventStatus.String(), ses, at, false)
			ev.PreviousStatus = prev.Status
			changes = append(changes, ev)
		}
	}
	var gone []wire.Session
	for k, prev := range last {
		if _, there := next[k]; !there {
			gone = append(gone, prev)
		}
	}
	slices.SortFunc(gone, func(a, b wire.Session) int { return a.PID - b.PID })
	for _, prev := range gone {
		ev := eventOf(domain.EventGone.String(), prev, at, false)
		ev.Verdict, ev.Reason = "removed", "no longer in node "+node+"'s presence (ended, or not live)"
		changes = append(changes, ev)
	}
	return next, changes
}

// eventOf is s (of a node, its host and endpoint set) as a watch event.
func eventOf(kind string, s wire.Session, at string, initial bool) wire.Event {
	ev := wire.Event{Event: kind, Host: s.Host, At: at, Harness: s.Harness, SessionID: s.SessionID, PID: s.PID, Name: s.Name,
		Status: s.Status, WaitingFor: s.WaitingFor, Cwd: s.Cwd, Endpoint: s.Endpoint, Verdict: s.Verdict, Reason: s.Reason, File: s.File, Initial: initial}
	if !s.Addressable {
		ev.Unaddressable = s.Unaddressable
	}
	return ev
}

// followBucket watches every key of the presence bucket (one watch of the
// whole bucket: an ordered consumer, each key's last value first, then
// every change pushed) and hands each entry to on, then nil once every
// value there at the start has come. A bucket not made yet is waited for
// (told to notes once). It returns nil when ctx ends, else
// host_unreachable when the connection to the bus ends or the watch
// cannot be made.
func (b *Bus) followBucket(ctx context.Context, on func(jetstream.KeyValueEntry), notes func(string)) error {
	alive := time.NewTicker(time.Second)
	defer alive.Stop()
	var kv jetstream.KeyValue
	for told := false; kv == nil; {
		start, cancel := context.WithTimeout(ctx, b.timeout)
		k, err := b.presence(start, false)
		cancel()
		switch {
		case err == nil:
			kv = k
			continue
		case ctx.Err() != nil:
			return nil
		case !errors.Is(err, jetstream.ErrBucketNotFound):
			return domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: %s", wire.Safe(err.Error()))
		case !told && notes != nil:
			notes("note: no node has joined the bus yet (no bucket " + PresenceBucket + "): waiting for one")
			told = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-alive.C:
		}
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return domain.Refuse(domain.ReasonHostUnreachable, "the fleet's bus: watch the presence: %s", wire.Safe(err.Error()))
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-alive.C:
			if b.nc.IsClosed() {
				return domain.Refuse(domain.ReasonHostUnreachable, "the connection to the fleet's bus ended")
			}
		case e := <-w.Updates():
			on(e)
		}
	}
}

// WatchFleet is `watch --fleet`: every node's presence at once, from one
// watch of the whole bucket. Each node's live sessions come first
// (appeared, Initial), then each change of a node's presence as
// Node.Watch gives it (diff: appeared, gone, renamed, status), a node
// that joins as its sessions' appeared, and a node that leaves (its key
// deleted or expired) as its sessions' gone, then a wire.EventLeft event
// with its host; each event with Host "nats:NODE" and its endpoint in
// the nats:v1: form, the presence read as list --fleet reads it (a
// document refused: the node left out, a note; a session it may not
// hold: left out, a note). At most MaxNodes nodes are followed. It
// returns nil when ctx ends or events says stop; host_unreachable when
// the connection to the bus ends.
func (b *Bus) WatchFleet(ctx context.Context, events func(wire.Event) bool, notes func(string)) error {
	if notes == nil {
		notes = func(string) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodes := map[string]nodeView{}
	said := map[string][]string{} // each node's notes last told
	tell := func(node string, now []string) {
		for _, n := range now {
			if !slices.Contains(said[node], n) {
				notes(n)
			}
		}
		if _, had := said[node]; had || len(said) < MaxNodes {
			said[node] = now
		}
	}
	initial := true
	emit := func(evs []wire.Event) {
		for _, ev := range evs {
			if !events(ev) {
				cancel()
				return
			}
		}
	}
	on := func(e jetstream.KeyValueEntry) {
		if e == nil {
			initial = false
			return
		}
		at := wire.RFC3339(time.Now())
		node := e.Key()
		last, known := nodes[node]
		if e.Operation() != jetstream.KeyValuePut {
			if !known {
				return
			}
			_, gone := diff(node, last, nil, at, false)
			delete(nodes, node)
			delete(said, node)
			dest, _ := domain.NodeDest(node) // a known node's name was read
			emit(append(gone, wire.Event{Event: wire.EventLeft, Host: dest.String(), At: at,
				Reason: fmt.Sprintf("node %s left the fleet's bus (its service stopped, or its presence was not refreshed for %s)", node, TTL)}))
			return
		}
		if !known && len(nodes) == MaxNodes {
			tell("", []string{tooManyNodes})
			return
		}
		var cur []wire.Session
		d, err := ReadDoc(node, e.Value())
		if err != nil {
			tell(node, []string{leftOut(node, err)})
			if !known {
				return
			}
		} else {
			var skipped []string
			cur, skipped = nodeSessions(d)
			tell(node, skipped)
		}
		next, changes := diff(node, last, cur, at, initial)
		nodes[node] = next
		emit(changes)
	}
	err := b.followBucket(ctx, on, notes)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
