package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// DocVersion is the version of Doc this build writes and reads. Version 2:
// a waiting session's entry says what it waits on (waitingFor).
const DocVersion = 2

// Doc is one node's presence: the value of its key in PresenceBucket, JSON.
type Doc struct {
	V    int    `json:"v"`    // DocVersion
	Node string `json:"node"` // the key: domain.ParseNode's form
	// Owner names the service's place, not its run: a hash of its
	// machine's host name, its boot and its state folder (the caller's:
	// internal/fleet). A service started again in the same place (after a
	// crash) takes its name back at once; any other is refused while the
	// name is live.
	Owner string `json:"owner"`
	// Host, PID and Version say who holds the name, for people.
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// UpdatedAt is when the node last listed its sessions (RFC 3339, its clock).
	UpdatedAt string `json:"updatedAt"`
	// Partial: a harness there could not be read (Notes say which).
	Partial bool     `json:"partial"`
	Notes   []string `json:"notes"`
	// Sessions are `list --json`'s entries there (Host "", endpoints of
	// that machine).
	Sessions []wire.Session `json:"sessions"`
}

// ErrNodeTaken is wrapped by Join's and Publish's error when another live
// service holds the node's name.
var ErrNodeTaken = errors.New("node name taken")

// Member is who joins: the node's name and the Doc fields that say who
// holds it.
type Member struct {
	Node, Owner, Host, Version string
	PID                        int
}

// Presence is a node's key in the presence bucket, held by this service.
// Its methods are not safe for concurrent use (app.Present calls them
// from one goroutine).
type Presence struct {
	kv  jetstream.KeyValue
	me  Member
	rev uint64
	now func() time.Time
	// remake makes the bucket again when it was lost (Bus.presence).
	remake func(ctx context.Context) (jetstream.KeyValue, error)
}

// Join claims me.Node on the bus (creating PresenceBucket if need be) with
// an empty presence: refused with ErrNodeTaken, saying who holds it, when
// the name's key is live and another place's (Doc.Owner); a key of this
// place (a service of this folder that died) is taken back.
func (b *Bus) Join(ctx context.Context, me Member) (*Presence, error) {
	if _, err := domain.ParseNode(me.Node); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	kv, err := b.presence(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("presence bucket %s: %w", PresenceBucket, b.refused(err))
	}
	p := &Presence{kv: kv, me: me, now: time.Now, remake: func(ctx context.Context) (jetstream.KeyValue, error) { return b.presence(ctx, true) }}
	if err := p.Publish(ctx, wire.Listing{}); err != nil {
		return nil, err
	}
	return p, nil
}

// Publish writes l as the node's presence (its sessions and notes, now),
// refreshing the key's TTL. A document over MaxDocBytes keeps the sessions
// that fit, Partial, with a note. It claims the key again if it expired
// meanwhile (the service was cut off longer than TTL); ErrNodeTaken when
// another place took the name then. A bucket that is gone (the servers'
// storage wiped, the bucket deleted) is made again, as Join makes it, and
// the key claimed in it.
func (p *Presence) Publish(ctx context.Context, l wire.Listing) error {
	doc := Doc{V: DocVersion, Node: p.me.Node, Owner: p.me.Owner, Host: p.me.Host, PID: p.me.PID, Version: p.me.Version,
		UpdatedAt: wire.RFC3339(p.now()), Partial: l.Partial, Notes: slices.Clone(l.Notes), Sessions: l.Sessions}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	if doc.Sessions == nil {
		doc.Sessions = []wire.Session{}
	}
	data, err := fit(&doc)
	if err != nil {
		return err
	}
	err = p.write(ctx, data)
	if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return err
	}
	kv, merr := p.remake(ctx)
	if merr != nil {
		return fmt.Errorf("%w; the presence bucket %s is gone and could not be made again: %w", err, PresenceBucket, merr)
	}
	p.kv, p.rev = kv, 0
	return p.claim(ctx, data)
}

// write updates the node's key from the service's last revision, or
// claims it.
func (p *Presence) write(ctx context.Context, data []byte) error {
	if p.rev > 0 {
		rev, err := p.kv.Update(ctx, p.me.Node, data, p.rev)
		if err == nil {
			p.rev = rev
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("publish presence: %w", err)
		}
	}
	return p.claim(ctx, data)
}

// fit marshals doc, dropping sessions from the end until it fits
// MaxDocBytes.
func fit(doc *Doc) ([]byte, error) {
	all := len(doc.Sessions)
	for {
		data, err := json.Marshal(doc)
		if err != nil || len(data) <= MaxDocBytes {
			return data, err
		}
		doc.Sessions = doc.Sessions[:len(doc.Sessions)/2]
		doc.Partial = true
		doc.Notes = append(doc.Notes[:len(doc.Notes):len(doc.Notes)], fmt.Sprintf("warning: presence holds %d of %d sessions: the rest is over %d bytes", len(doc.Sessions), all, MaxDocBytes))
	}
}

// claim creates the node's key, or takes it back from a dead service of
// this place.
func (p *Presence) claim(ctx context.Context, data []byte) error {
	rev, err := p.kv.Create(ctx, p.me.Node, data)
	if err == nil {
		p.rev = rev
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("claim node %s: %w", p.me.Node, err)
	}
	e, err := p.kv.Get(ctx, p.me.Node)
	if err != nil {
		return fmt.Errorf("claim node %s: %w", p.me.Node, err)
	}
	var held Doc
	if json.Unmarshal(e.Value(), &held) != nil || held.Owner != p.me.Owner {
		return fmt.Errorf("%w: node %s is held by a live peerctl serve (%s, %s ago); names are unique on the bus: give this one another --node (or $PEERCTL_NODE), or stop that one (its name is free %s after it ends)",
			ErrNodeTaken, p.me.Node, holder(held), p.now().Sub(e.Created()).Round(time.Second), TTL)
	}
	if p.rev, err = p.kv.Update(ctx, p.me.Node, data, e.Revision()); err != nil {
		return fmt.Errorf("claim node %s: %w", p.me.Node, err)
	}
	return nil
}

// holder names who holds a key, escaped: "pid P on host H, peerctl V".
func holder(d Doc) string {
	if d.Host == "" && d.PID == 0 {
		return "a holder that does not say who it is"
	}
	return fmt.Sprintf("pid %d on host %s, peerctl %s", d.PID, wire.Safe(wire.Clip(d.Host, 100)), wire.Safe(wire.Clip(d.Version, 40)))
}

// Leave deletes the node's key, if it is still this service's: the node
// drops out of the fleet at once, not TTL later.
func (p *Presence) Leave(ctx context.Context) error {
	if p.rev == 0 {
		return nil
	}
	err := p.kv.Delete(ctx, p.me.Node, jetstream.LastRevision(p.rev))
	p.rev = 0
	return err
}

// Fleet reads every node's presence in one pass over the bucket (an
// ordered consumer delivering each key's last value): the sessions of
// each node, by node name, each with Host "nats:NODE" and its endpoint
// nats:v1:NODE:<endpoint>; a node's notes and its partial flag; a warning
// note, naming the node, for each document refused (ReadDoc) and each
// session left out. What it holds is bounded (newest): more than
// MaxNodes nodes or MaxFleetBytes of presence leaves the nodes least
// recently updated out, the listing partial, with a warning. No bucket yet is an empty fleet
// with a note. The whole read is bounded by the bus's timeout
// (Settings.Timeout). Errors: the bus did not answer, or not all of the
// bucket came in time.
func (b *Bus) Fleet(ctx context.Context) (wire.Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	out := wire.Listing{Sessions: []wire.Session{}}
	kv, err := b.presence(ctx, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		out.Notes = append(out.Notes, "note: no node has joined the bus yet (no bucket "+PresenceBucket+")")
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("presence bucket %s: %w", PresenceBucket, b.refused(err))
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return out, fmt.Errorf("read presence: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var kept newest
	for {
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("read presence: not all of it came within %s: %w", b.timeout, ctx.Err())
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return out, fmt.Errorf("read presence: the watch ended: %w", ctx.Err())
			case e != nil:
				kept.add(e)
				continue
			}
		}
		// every key's value has come
		if kept.dropped > 0 {
			out.Partial = true
			out.Notes = append(out.Notes, fmt.Sprintf("warning: %d nodes left out: a listing holds at most %d nodes and %d bytes of presence (the nodes least recently updated are left out)", kept.dropped, maxNodes, maxFleetBytes))
		}
		return merge(out, kept.entries), nil
	}
}

// MaxFleetBytes bounds what one fleet listing holds of the nodes'
// presence: 64 MiB (64 nodes at MaxDocBytes; about 100,000 sessions).
const MaxFleetBytes = 64 << 20

// maxFleetBytes and maxNodes are MaxFleetBytes and MaxNodes (tests
// shorten them).
var maxFleetBytes, maxNodes = MaxFleetBytes, MaxNodes

// newest keeps the entries of a pass over the bucket (delivered in
// stream order: the least recently updated first) that fit maxNodes and
// maxFleetBytes, dropping the oldest first: the rest of a fleet too big
// is the nodes that are live now.
type newest struct {
	entries []jetstream.KeyValueEntry
	bytes   int
	dropped int
}

func (n *newest) add(e jetstream.KeyValueEntry) {
	n.entries = append(n.entries, e)
	n.bytes += len(e.Value())
	for n.bytes > maxFleetBytes || len(n.entries) > maxNodes {
		n.bytes -= len(n.entries[0].Value())
		n.entries[0] = nil
		n.entries = n.entries[1:]
		n.dropped++
	}
}

// merge adds each entry's node to out, by node name.
func merge(out wire.Listing, entries []jetstream.KeyValueEntry) wire.Listing {
	slices.SortFunc(entries, func(a, b jetstream.KeyValueEntry) int { return strings.Compare(a.Key(), b.Key()) })
	for _, e := range entries {
		out = addNode(out, nodePart(e.Key(), e.Value()))
	}
	return out
}

// nodePart is the part of the fleet's listing the presence value of key
// gives: its sessions (nodeSessions), its notes (each headed "node
// NODE: ") and its partial flag; a value ReadDoc refuses is no session,
// a warning, partial.
func nodePart(key string, value []byte) wire.Listing {
	d, err := ReadDoc(key, value)
	if err != nil {
		return wire.Listing{Partial: true, Notes: []string{leftOut(key, err)}}
	}
	part := wire.Listing{Partial: d.Partial}
	for _, n := range d.Notes {
		part.Notes = append(part.Notes, "node "+d.Node+": "+wire.Clip(n, 2000))
	}
	sessions, skipped := nodeSessions(d)
	part.Notes = append(part.Notes, skipped...)
	part.Sessions = sessions
	return part
}

// addNode is out with a node's part after what it holds.
func addNode(out, part wire.Listing) wire.Listing {
	out.Partial = out.Partial || part.Partial
	out.Notes = append(out.Notes, part.Notes...)
	out.Sessions = append(out.Sessions, part.Sessions...)
	return out
}

// leftOut is the warning for the node of key whose presence ReadDoc
// refused with err.
func leftOut(key string, err error) string {
	return fmt.Sprintf("warning: node %s left out: %s", wire.Safe(wire.Clip(key, domain.MaxNodeBytes)), wire.Safe(wire.Clip(err.Error(), 300)))
}

// ReadDoc reads the presence document of key: at most MaxDocBytes, exact
// keys (jsonexact: none unknown, none missing, each session's too), this
// DocVersion, its node the key and a valid name (domain.ParseNode).
func ReadDoc(key string, data []byte) (Doc, error) {
	var d Doc
	if len(data) > MaxDocBytes {
		return d, fmt.Errorf("its presence is %d bytes, over %d", len(data), MaxDocBytes)
	}
	if _, err := domain.ParseNode(key); err != nil {
		return d, err
	}
	if err := jsonexact.Exact(data, &d); err != nil {
		return d, fmt.Errorf("its presence is not this build's document: %w", err)
	}
	if err := jsonexact.Complete(data, d); err != nil {
		return d, fmt.Errorf("its presence is not this build's document: %w", err)
	}
	var raw struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	_ = json.Unmarshal(data, &raw) // Exact read it
	for _, s := range raw.Sessions {
		if err := jsonexact.Complete(s, wire.Session{}); err != nil {
			return d, fmt.Errorf("its presence is not this build's document: a session: %w", err)
		}
	}
	switch {
	case d.V != DocVersion:
		return d, fmt.Errorf("its presence is version %d; this build reads %d", d.V, DocVersion)
	case d.Node != key:
		return d, fmt.Errorf("its presence names another node, %q", wire.Clip(d.Node, 100))
	}
	return d, nil
}

// checkSession refuses a session a node's presence may not hold: one of
// another machine (a host, an endpoint of ssh: or nats:), not live, an
// endpoint that is none, a harness this build does not know, an entry
// list --json never prints for a live session (wire.CheckLive). Its
// errors quote once (%q); the note is escaped where it is printed.
func checkSession(s wire.Session) error {
	switch {
	case s.Host != "":
		return fmt.Errorf("it names host %q: a node publishes its own sessions only", wire.Clip(s.Host, 100))
	case s.Verdict != domain.VerdictLive.String():
		return fmt.Errorf("its verdict is %q, not live", wire.Clip(s.Verdict, 40))
	case s.Endpoint == "":
	case strings.HasPrefix(s.Endpoint, "ssh:") || strings.HasPrefix(s.Endpoint, "nats:"):
		return fmt.Errorf("its endpoint %q is another machine's", wire.Clip(s.Endpoint, 200))
	default:
		ep, err := domain.ParseEndpoint(s.Endpoint)
		if err != nil {
			return fmt.Errorf("its endpoint is none: %s", wire.Safe(wire.Clip(err.Error(), 200)))
		}
		if ep.Harness().String() != s.Harness {
			return fmt.Errorf("its endpoint is a %s one, its harness %q", ep.Harness(), wire.Clip(s.Harness, 40))
		}
	}
	if _, err := domain.ParseHarness(wire.Clip(s.Harness, 40)); err != nil {
		return fmt.Errorf("its harness: %w", err)
	}
	return wire.CheckLive(s)
}
