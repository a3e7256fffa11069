package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// Node is where a use case runs: this machine (LocalNode) or another
// machine's own peerctl reached over ssh (adapters/sshhost.Node). A
// command asks a node for a use case and does not know which it holds;
// both answer with the documents of package wire, which is also what the
// far side prints.
type Node interface {
	// Host is the node's machine: the zero Dest for this one.
	Host() domain.Dest
	// List is `list --json`: the live sessions (every record with q.All)
	// of q.Only's harnesses (every harness when none), with the node's
	// warnings and notes; an error when nothing could be listed (a
	// *domain.Refusal, host_unreachable for a host that could not be used).
	List(ctx context.Context, q wire.ListQuery) (wire.Listing, error)
	// Show is `show --json` of the one record address names (live or
	// not: an id, a prefix, a name, a pid, a file name, an endpoint of
	// the node's); a *domain.Refusal when none or several do.
	Show(ctx context.Context, address string) (wire.Show, error)
	// Enrich is `enrich --json`: for each of ids (full session ids) that
	// is a live session there, its endpoint and status.
	Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error)
	// Send is `send --json`: q's text delivered into the one live session
	// q.Address names there, verified and confirmed as q asks (Sent: the
	// receipt, its notes, the exit code; a no_reply or wait_timeout after
	// the hand-over is a receipt with ok false). An error is a refusal
	// (*domain.Refusal): nothing was handed over, or, outcome_unknown, the
	// text went to a far side that did not say what became of it.
	Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error)
	// Doctor is `doctor --json`: whether peerctl can work there, with the
	// report's table for people (Rows, Summary) and the node's notes; an
	// error when no report came (host_unreachable for a host that could
	// not be used or printed no report).
	Doctor(ctx context.Context) (wire.Doctor, error)
	// Watch is `watch --json`: the node's session events from its start
	// on (every live session first, Initial), each handed to events (a
	// false return ends the watch), and what a person should know but is
	// no event to notes (a registry folder that does not exist yet). It
	// returns nil when ctx ends or events says stop; otherwise the watch
	// ended by itself, and why: this machine's registry could not be read
	// any more, a host's watch ended (host_unreachable).
	Watch(ctx context.Context, events func(wire.Event) bool, notes func(string)) error
	// Relay is `relay`: the node's relay (its courier, named q.Name, each
	// send bounded by q.Timeout) takes the send requests of requests, one
	// JSON line each, and every line it prints (wire.RelayLine: ready
	// first, then a receipt or refusal for each request in order, and
	// inbound messages as they come) is handed to emit, one at a time, a
	// host's with its host. It returns nil when requests end (once each is answered) or
	// ctx ends. An emit error stops it (the relay's reader is gone: a
	// send whose answer cannot be written is not made) and is returned.
	// A relay on another machine that ended with requests handed over
	// and unanswered gives each a refusal line outcome_unknown (it may
	// have been sent: never resent) and returns a host_unreachable
	// refusal; so does one that could not be reached, and one whose
	// lines are not this build's (wire.Broken).
	Relay(ctx context.Context, q wire.RelayQuery, requests io.Reader, emit func(wire.RelayLine) error) error
}

// LocalNode is this machine as a Node: the use cases of the Service Open
// builds (for the query's harnesses only, when it names some).
type LocalNode struct {
	Open func(only []domain.Harness) (*Service, error)
	// Watching is the Service a watch runs on (one that follows the
	// registry folders and the sessions' processes); nil: Open(nil).
	Watching func() (*Service, error)
	// Sending is the Service a send runs on: q's transport, timeout,
	// confirmation window (none with NoConfirm) and sender's name.
	Sending func(q wire.SendQuery) (*Service, error)
	// Held is what becomes of a send the trust policy holds (err:
	// domain.AsHeld): peerctl serve's hold use case, which keeps it
	// awaiting approval (Server.Keep). Nil: the hold is the refusal.
	Held func(ctx context.Context, q wire.SendQuery, err error) (wire.Sent, error)
	// Relaying is this machine's relay, as Node.Relay says: its couriers
	// and its durable requests (through peerctl serve) are the command
	// line's to build, so the command line gives it. Nil: Relay fails.
	Relaying func(ctx context.Context, q wire.RelayQuery, requests io.Reader, emit func(wire.RelayLine) error) error
	// Doctoring is what a doctor runs on (DoctorSetup).
	Doctoring func() (DoctorSetup, error)
}

// DoctorSetup is what LocalNode.Doctor checks with: the Service and its
// processes, the calling process, and MCP, which says where `peerctl
// mcp`'s server is (the calling program's to find).
type DoctorSetup struct {
	Service *Service
	Procs   ports.Processes
	Env     DoctorEnv
	MCP     func(context.Context) wire.DoctorMCP
}

var _ Node = LocalNode{}

// Host is the zero Dest: this machine.
func (LocalNode) Host() domain.Dest { return domain.Dest{} }

// List reads this machine's registries (Service.List). A harness asked
// about whose registry could not be read makes the listing Partial, with
// a warning note; a missing registry folder is a note when nothing was
// listed and its harness was asked about (--harness; else the primary's).
// NoRecord says when no record at all was found (--all would add none).
func (n LocalNode) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	svc, err := n.Open(q.Only)
	if err != nil {
		return wire.Listing{}, err
	}
	l, err := svc.List(ctx, q.All)
	if err != nil {
		return wire.Listing{}, err
	}
	l.Entries = FilterHarness(l.Entries, q.Only...)
	out := wire.Listing{Sessions: make([]wire.Session, 0, len(l.Entries)), Partial: len(l.UnreadIn(q.Only...)) > 0,
		NoRecord: len(l.Entries) == 0 && l.NotLive == 0}
	for _, e := range l.Entries {
		out.Sessions = append(out.Sessions, wire.SessionOf(e))
	}
	for _, u := range l.Unread {
		out.Notes = append(out.Notes, fmt.Sprintf("warning: %s: registry not read, its sessions are left out: %s", u.Harness, u.Err))
	}
	for _, w := range l.Warnings {
		out.Notes = append(out.Notes, "warning: "+w)
	}
	if len(l.Entries) == 0 {
		asked := q.Only // the primary's folder when every harness is read
		if len(asked) == 0 {
			asked = []domain.Harness{l.DirHarness}
		}
		for _, a := range l.Absent {
			if slices.Contains(asked, a.Harness) {
				out.Notes = append(out.Notes, "note: "+MissingFolderNote(a.Dir))
			}
		}
	}
	return out, nil
}

// Show is Service.Show as a wire.Show.
func (n LocalNode) Show(ctx context.Context, address string) (wire.Show, error) {
	svc, err := n.Open(nil)
	if err != nil {
		return wire.Show{}, err
	}
	d, err := svc.Show(ctx, address)
	if err != nil {
		return wire.Show{}, err
	}
	r := d.Entry.Record
	sj := wire.SessionOf(d.Entry)
	sj.Warnings = slices.Concat(sj.Warnings, d.Warnings)
	return wire.Show{Session: sj, UpdatedAt: wire.RFC3339(r.UpdatedAt), ProcStart: r.ProcStart, ProcStartFt: r.ProcStartFt,
		PIDDomain: r.PIDDomain, Tmux: r.Tmux, PeerProtocol: r.PeerProtocol, SocketOnDisk: d.SocketOnDisk.String(),
		SocketNote: d.SocketNote, Transcript: d.Transcript, TranscriptExists: d.TranscriptExists, Path: r.Path, Notes: d.Notes, Glosses: d.Glosses}, nil
}

// Enrich is Service.Enrich.
func (n LocalNode) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	svc, err := n.Open(nil)
	if err != nil {
		return nil, err
	}
	return svc.Enrich(ctx, ids)
}

// Send runs Service.Send on the Service Sending builds for q, its result
// as its documents (Sent); a send the trust policy holds is Held's.
func (n LocalNode) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	svc, err := n.Sending(q)
	if err != nil {
		return wire.Sent{}, err
	}
	res, err := svc.Send(ctx, SendRequestOf(q))
	if _, held := domain.AsHeld(err); held && n.Held != nil {
		return n.Held(ctx, q, err)
	}
	return Sent(res, err, q.AwaitReply > 0)
}

// SendRequestOf is q as a Service takes it.
func SendRequestOf(q wire.SendQuery) SendRequest {
	return SendRequest{Address: q.Address, Text: q.Text, DryRun: q.DryRun, AwaitReply: q.AwaitReply, Settled: q.Settled,
		ConfirmOptions: ConfirmOptions{NoConfirm: q.NoConfirm, ConfirmTimeout: q.ConfirmTimeout, RequireConfirm: q.RequireConfirm, Wait: q.Wait}}
}

// Doctor runs Service.Doctor with what Doctoring gives, its report as its
// document (DoctorDoc).
func (n LocalNode) Doctor(ctx context.Context) (wire.Doctor, error) {
	s, err := n.Doctoring()
	if err != nil {
		return wire.Doctor{}, err
	}
	r := s.Service.Doctor(ctx, s.Procs, s.Env)
	return DoctorDoc(r, s.MCP(ctx)), nil
}

// Watch runs Service.WatchNotes, each event as its document (noticed
// now); see Node.
func (n LocalNode) Watch(ctx context.Context, events func(wire.Event) bool, notes func(string)) error {
	open := n.Watching
	if open == nil {
		open = func() (*Service, error) { return n.Open(nil) }
	}
	svc, err := open()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = svc.WatchNotes(ctx, func(e domain.Event) {
		if ctx.Err() == nil && !events(wire.NewEvent(e, time.Now())) {
			cancel()
		}
	}, notes)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Relay is Relaying's relay (see Node).
func (n LocalNode) Relay(ctx context.Context, q wire.RelayQuery, requests io.Reader, emit func(wire.RelayLine) error) error {
	if n.Relaying == nil {
		return errors.New("relay: this machine's node has no relay")
	}
	return n.Relaying(ctx, q, requests, emit)
}

// MaxParallelNodes bounds how many nodes one fan-out reaches at once: the
// hosts of a hosts file are reached in parallel, so hosts that hang cost
// one host timeout in all, not one after another.
const MaxParallelNodes = 16

// NodeListing is what one node's listing gave: its Listing, or Err when
// nothing came from it.
type NodeListing struct {
	Host    domain.Dest
	Listing wire.Listing
	Err     error
}

// ListNodes lists every node at once (at most MaxParallelNodes at a time)
// and returns what each gave, in the order of nodes. One node (the plain
// local list) is listed on the caller's goroutine: a fresh one would grow
// its stack anew under the listing's deep calls.
func ListNodes(ctx context.Context, nodes []Node, q wire.ListQuery) []NodeListing {
	got := make([]NodeListing, len(nodes))
	list := func(i int) {
		l, err := nodes[i].List(ctx, q)
		got[i] = NodeListing{Host: nodes[i].Host(), Listing: l, Err: err}
	}
	if len(nodes) == 1 {
		list(0)
		return got
	}
	slots := make(chan struct{}, MaxParallelNodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			list(i)
		})
	}
	wg.Wait()
	return got
}

// Merged is a listing over several nodes, in the order of the nodes: the
// sessions of every node that answered, and what to say of each node (its
// notes, then one warning for a node whose sessions are left out).
type Merged struct {
	Sessions []wire.Session
	Notes    []NodeNote
	Outcome  ListOutcome
	// NoRecord: every node answered that it holds no record at all
	// (wire.Listing.NoRecord).
	NoRecord bool
}

// NodeNote is one line to say of a node: Text is the node's own words
// (a note of its listing, or its error), not yet escaped; Warning marks
// the line of a node that gave no sessions.
type NodeNote struct {
	Host    domain.Dest
	Text    string
	Warning bool
}

// Merge merges ls (see Merged): a node that failed gives the warning
// "not listed, its sessions are left out: ERR", and the outcome is
// Outcome's. Sessions is never nil.
func Merge(ls []NodeListing) Merged {
	m := Merged{Sessions: []wire.Session{}, Outcome: Outcome(ls), NoRecord: len(ls) > 0}
	for _, l := range ls {
		m.NoRecord = m.NoRecord && l.Err == nil && l.Listing.NoRecord
		for _, n := range l.Listing.Notes {
			m.Notes = append(m.Notes, NodeNote{Host: l.Host, Text: n})
		}
		if l.Err != nil {
			m.Notes = append(m.Notes, NodeNote{Host: l.Host, Text: "not listed, its sessions are left out: " + l.Err.Error(), Warning: true})
			continue
		}
		m.Sessions = append(m.Sessions, l.Listing.Sessions...)
	}
	return m
}

// Where names a node's machine for people: "this machine", or "host DEST".
func Where(host domain.Dest) string {
	if host.IsLocal() {
		return "this machine"
	}
	return "host " + host.String()
}

// ListOutcome is how a listing over several nodes ended, by precedence.
type ListOutcome int

const (
	// ListComplete: every node answered with all it was asked.
	ListComplete ListOutcome = iota
	// ListPartial: a node's listing is partial, or a node failed for a
	// reason of its own (its sessions are left out).
	ListPartial
	// ListUnreachable: a node could not be reached (host_unreachable);
	// it wins over ListPartial.
	ListUnreachable
)

// Outcome is the outcome of ls (see ListOutcome).
func Outcome(ls []NodeListing) ListOutcome {
	out := ListComplete
	for _, l := range ls {
		switch r, ok := domain.AsRefusal(l.Err); {
		case l.Err != nil && ok && r.Reason == domain.ReasonHostUnreachable:
			return ListUnreachable
		case l.Err != nil || l.Listing.Partial:
			out = ListPartial
		}
	}
	return out
}
