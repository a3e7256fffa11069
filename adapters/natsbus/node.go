package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// Node is a node of the fleet's bus ("nats:NODE") as a node of the use
// cases (app.Node, as this machine's app.LocalNode and an ssh host's
// sshhost.Node): each use case is a Request to that node's service, which
// runs it as its own command line does, and its Answer is read by the
// same readers as an ssh host's output (exact keys, bounded, its
// endpoints in the nats:v1: form, its text escaped where printed). Each
// call connects to the bus as s says (s.Node: this machine's name, the
// sender), and is bounded by timeout (a send: plus its own waits).
type Node struct {
	s       Settings
	dest    domain.Dest
	node    string
	timeout time.Duration
}

// NewNode is dest's service (dest a node: domain.Dest.Node), reached with
// s, each call bounded by timeout (> 0).
func NewNode(s Settings, dest domain.Dest, timeout time.Duration) (*Node, error) {
	node, ok := dest.Node()
	if !ok {
		return nil, fmt.Errorf("%s is no node of the fleet's bus (nats:NODE)", dest)
	}
	if _, err := domain.ParseNode(s.Node); err != nil {
		return nil, fmt.Errorf("this machine's node name: %w", err)
	}
	return &Node{s: s, dest: dest, node: node, timeout: timeout}, nil
}

// Host is the node's Dest, nats:NODE.
func (n *Node) Host() domain.Dest { return n.dest }

// List asks the node's `list --json` (q.All, q.Only), read by
// wire.ReadListing.
func (n *Node) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	r := Request{Op: "list", All: q.All}
	for _, h := range q.Only {
		r.Only = append(r.Only, h.String())
	}
	res, err := n.ask(ctx, r, n.timeout, false)
	if err != nil {
		return wire.Listing{}, err
	}
	return wire.ReadListing(n.dest, res)
}

// Show asks the node's `show --json -- ADDRESS`, read by wire.ReadShow.
func (n *Node) Show(ctx context.Context, address string) (wire.Show, error) {
	res, err := n.ask(ctx, Request{Op: "show", Address: []byte(address)}, n.timeout, false)
	if err != nil {
		return wire.Show{}, err
	}
	return wire.ReadShow(n.dest, address, res)
}

// Enrich asks the node's `enrich --json -- IDS...`, read by
// wire.ReadEnrich.
func (n *Node) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	res, err := n.ask(ctx, Request{Op: "enrich", IDs: ids}, n.timeout, false)
	if err != nil {
		return nil, err
	}
	return wire.ReadEnrich(n.dest, res)
}

// Doctor asks the node's `doctor --json`, read by wire.ReadDoctorRun.
func (n *Node) Doctor(ctx context.Context) (wire.Doctor, error) {
	res, err := n.ask(ctx, Request{Op: "doctor"}, n.timeout, false)
	if err != nil {
		return wire.Doctor{}, err
	}
	return wire.ReadDoctorRun(n.dest, res)
}

// Send asks the node's service to run q (its typed order, the text in
// it), bounded by the node's timeout plus q's own waits, read by
// wire.ReadSent: the far harness's receipt. The node's trust policy
// decides it first, as a message from this machine's node (entrance
// node:NAME). Before the request went out, a bus or node that cannot be
// reached is host_unreachable; once it went out, no answer (a timeout, a
// lost connection) is outcome_unknown: the node may have delivered it.
func (n *Node) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	budget := n.timeout + q.Timeout + q.ConfirmTimeout + q.Wait + q.AwaitReply
	res, err := n.ask(ctx, Request{Op: "send", Send: &wire.SendOrder{Query: q}}, budget, !q.DryRun)
	if err != nil {
		return wire.Sent{}, err
	}
	return wire.ReadSent(n.dest, res, q)
}

// ErrNotOverTheBus is the error of a use case a node of the bus does not
// run for other machines yet (relay).
var ErrNotOverTheBus = errors.New("not over the fleet's bus yet")

// Relay is not over the bus yet (ErrNotOverTheBus).
func (n *Node) Relay(context.Context, wire.RelayQuery, io.Reader, func(wire.RelayLine) error) error {
	return fmt.Errorf("relay --host %s: %w (docs/FLEET.md)", n.dest, ErrNotOverTheBus)
}

// ask sends r to the node and waits up to budget for its answer, as a
// far side's run (ports.RemoteResult: its document as Stdout, its stderr
// lines, its code, its version). handed says the request carries a text
// to deliver: once it went out, no answer is outcome_unknown.
func (n *Node) ask(ctx context.Context, r Request, budget time.Duration, handed bool) (ports.RemoteResult, error) {
	r.V, r.Budget = RequestVersion, budget
	data, err := json.Marshal(r)
	if err != nil {
		return ports.RemoteResult{}, err
	}
	s := n.s
	if s.Name == "" {
		s.Name = "peerctl " + r.Op + " --host " + n.dest.String()
	}
	bus, err := Connect(s, false)
	if err != nil {
		return ports.RemoteResult{}, domain.Refuse(domain.ReasonHostUnreachable, "%s: the fleet's bus: %s", n.dest, wire.Safe(err.Error()))
	}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	msg, err := bus.nc.RequestWithContext(ctx, RequestSubject(n.node, s.Node), data)
	if err != nil {
		return ports.RemoteResult{}, n.unanswered(bus, err, handed, r)
	}
	return readAnswer(n.dest, msg.Data)
}

// unanswered is the refusal of a request that got no answer (err).
func (n *Node) unanswered(bus *Bus, err error, handed bool, r Request) error {
	if last := bus.nc.LastError(); last != nil && strings.Contains(strings.ToLower(last.Error()), "permissions violation") {
		err = last // the servers refused the request: it never went out
		handed = false
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return domain.Refuse(domain.ReasonHostUnreachable, "node %s has no service on the fleet's bus (nothing was sent): is its peerctl serve --nats running there, joined as %s? (peerctl list --fleet shows the live nodes)",
			n.node, n.node)
	case handed:
		return domain.Refuse(domain.ReasonOutcomeUnknown, "node %s did not answer over the fleet's bus (%s) after the request went out: it may have delivered it; look (%s) before sending it again",
			n.node, wire.Safe(err.Error()), wire.Look(n.dest, r.Send.Query.Address))
	}
	return domain.Refuse(domain.ReasonHostUnreachable, "node %s did not answer over the fleet's bus: %s", n.node, wire.Safe(err.Error()))
}

// readAnswer reads an Answer (at most MaxAnswerBytes, exact keys, this
// RequestVersion) as the far side's run it stands for.
func readAnswer(dest domain.Dest, data []byte) (ports.RemoteResult, error) {
	var a Answer
	err := fmt.Errorf("an answer of %d bytes, over %d", len(data), MaxAnswerBytes)
	if len(data) <= MaxAnswerBytes {
		err = jsonexact.Exact(data, &a)
	}
	if err == nil {
		err = jsonexact.Complete(data, a)
	}
	if err == nil && a.V != RequestVersion {
		err = fmt.Errorf("an answer of version %d; this build reads %d", a.V, RequestVersion)
	}
	if err != nil {
		return ports.RemoteResult{}, wire.Broken(dest, err)
	}
	var stderr []byte
	for _, l := range a.Stderr {
		stderr = append(append(stderr, strings.ReplaceAll(l, "\n", " ")...), '\n')
	}
	return ports.RemoteResult{Stdout: a.Doc, Stderr: stderr, Code: a.Code, Version: wire.Clip(a.Version, 100)}, nil
}
