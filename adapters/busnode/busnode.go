// Package busnode is a node of the fleet's bus ("nats:NODE") as a node of
// the use cases (app.Node), over a Carrier that takes each typed Request
// to the node's service and brings its Answer back: the bus itself
// (adapters/natsbus, a connection per call), or this machine's running
// service, which forwards it over its own warm connection (peerctl
// serve's "bus" op, docs/SERVE.md). Whichever carries it, the answer is
// read here, by the same readers as an ssh host's output (ports/wire:
// exact keys, bounded, wire.Agrees), so nothing in the trust chain
// depends on the carrier. It links no NATS package: peerctl builds it
// without the bus client (docs/FLEET.md).
package busnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// RequestVersion is the version of Request and Answer this build speaks.
const RequestVersion = 1

// MaxAnswerBytes bounds one answer (the servers' default max_payload is
// 1 MiB; an answer over it is refused by the service that would send it).
const MaxAnswerBytes = 1 << 20

// Request is one use case asked of a node, typed: no argv, no
// environment, nothing a shell reads. Op says which; the fields of the
// others are empty.
type Request struct {
	V int `json:"v"`
	// Op is "list", "show", "enrich", "send" or "doctor".
	Op string `json:"op"`
	// Budget is how long the caller waits for the answer (the service
	// works on it no longer, and at most an hour).
	Budget time.Duration `json:"budget"`
	// All and Only are list's (wire.ListQuery; Only the harnesses' words).
	All  bool     `json:"all,omitempty"`
	Only []string `json:"only,omitempty"`
	// Address is show's, its bytes exact.
	Address []byte `json:"address,omitempty"`
	// IDs are enrich's.
	IDs []string `json:"ids,omitempty"`
	// Send is send's order (wire.SendOrder: its bytes exact); only its
	// Query is used: the sender's settings (its paths, its ssh) are
	// never the node's, and a durable send across machines is not built.
	Send *wire.SendOrder `json:"send,omitempty"`
}

// Answer is a node's answer: what its command line would have printed for
// the request with --json (Doc: the same document), its stderr's lines
// and its exit code, and its peerctl's version. The caller reads it as it
// reads another machine's output over ssh (the wire package's readers).
type Answer struct {
	V       int             `json:"v"`
	Version string          `json:"version"`
	Code    int             `json:"code"`
	Doc     json.RawMessage `json:"doc"`
	Stderr  []string        `json:"stderr"`
}

// ListQuery is r's ListQuery; an unknown harness is an error.
func (r Request) ListQuery() (wire.ListQuery, error) {
	q := wire.ListQuery{All: r.All}
	for _, w := range r.Only {
		h, err := domain.ParseHarness(w)
		if err != nil {
			return q, fmt.Errorf("list: %w", err)
		}
		q.Only = append(q.Only, h)
	}
	return q, nil
}

// Carrier takes one request (a Request as JSON) to node to's service and
// returns its answer's bytes as they came (read by the Node, not here),
// waiting no longer than ctx. Its errors say whether the request went
// out: one wrapping ErrNotSent never left this machine (the bus did not
// answer, the servers refused it); ErrNoService, no service takes the
// node's requests (nothing was sent); ErrBroken, what came back is no
// answer; any other, it went out and its answer did not come (a send may
// have been delivered).
type Carrier interface {
	Carry(ctx context.Context, to string, request []byte) ([]byte, error)
}

var (
	// ErrNotSent is a request that never went out: the bus (or the
	// service carrying it) did not take it.
	ErrNotSent = errors.New("the request was not sent")
	// ErrNoService is a node with no service subscribed (the servers
	// said no one responds): nothing was sent.
	ErrNoService = errors.New("no service takes the node's requests")
	// ErrBroken is an answer that came and is none (over MaxAnswerBytes,
	// not an Answer), said by the service that carried it: a broken far
	// side, as ReadAnswer says of one.
	ErrBroken = errors.New("a broken answer")
)

// Node is a node of the fleet's bus as a node of the use cases: each use
// case is a Request carried to that node's service (Carrier), which runs
// it as its own command line does, and its Answer is read by the same
// readers as an ssh host's output (exact keys, bounded, its endpoints in
// the nats:v1: form, its text escaped where printed). Each call is
// bounded by timeout (a send: plus its own waits).
type Node struct {
	carry   Carrier
	dest    domain.Dest
	node    string
	timeout time.Duration
}

// New is dest's service (dest a node: domain.Dest.Node), reached by
// carry, each call bounded by timeout (> 0).
func New(carry Carrier, dest domain.Dest, timeout time.Duration) (*Node, error) {
	node, ok := dest.Node()
	if !ok {
		return nil, fmt.Errorf("%s is no node of the fleet's bus (nats:NODE)", dest)
	}
	return &Node{carry: carry, dest: dest, node: node, timeout: timeout}, nil
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
// lost connection, the carrying service gone) is outcome_unknown: the
// node may have delivered it. It is never sent again.
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

// ErrNotCarried is the error of a watch of a node carried by this
// machine's service: a watch follows the node's presence on the bus, not
// a request (natsbus.Node.Watch).
var ErrNotCarried = errors.New("not carried by this machine's service")

// Watch is not a request (ErrNotCarried).
func (n *Node) Watch(context.Context, func(wire.Event) bool, func(string)) error {
	return fmt.Errorf("watch --host %s: %w (it follows the node's presence on the bus itself)", n.dest, ErrNotCarried)
}

// ask carries r to the node and waits up to budget for its answer, as a
// far side's run (ports.RemoteResult: its document as Stdout, its stderr
// lines, its code, its version). handed says the request carries a text
// to deliver: once it went out, no answer is outcome_unknown.
func (n *Node) ask(ctx context.Context, r Request, budget time.Duration, handed bool) (ports.RemoteResult, error) {
	r.V, r.Budget = RequestVersion, budget
	data, err := json.Marshal(r)
	if err != nil {
		return ports.RemoteResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	answer, err := n.carry.Carry(ctx, n.node, data)
	if err != nil {
		return ports.RemoteResult{}, n.unanswered(err, handed, r)
	}
	return ReadAnswer(n.dest, answer)
}

// unanswered is the refusal of a request that got no answer (err).
func (n *Node) unanswered(err error, handed bool, r Request) error {
	switch {
	case errors.Is(err, ErrNoService):
		return domain.Refuse(domain.ReasonHostUnreachable, "node %s has no service on the fleet's bus (nothing was sent): is its peerctl serve --nats running there, joined as %s? (peerctl list --fleet shows the live nodes)",
			n.node, n.node)
	case errors.Is(err, ErrBroken):
		return wire.Broken(n.dest, err)
	case errors.Is(err, ErrNotSent):
		return domain.Refuse(domain.ReasonHostUnreachable, "%s: the fleet's bus: %s", n.dest, wire.Safe(err.Error()))
	case handed:
		return domain.Refuse(domain.ReasonOutcomeUnknown, "node %s did not answer over the fleet's bus (%s) after the request went out: it may have delivered it; look (%s) before sending it again",
			n.node, wire.Safe(err.Error()), wire.Look(n.dest, r.Send.Query.Address))
	}
	return domain.Refuse(domain.ReasonHostUnreachable, "node %s did not answer over the fleet's bus: %s", n.node, wire.Safe(err.Error()))
}

// ReadAnswer reads an Answer (at most MaxAnswerBytes, exact keys, this
// RequestVersion) as the far side's run it stands for; anything else is
// a broken far side (wire.Broken: host_unreachable).
func ReadAnswer(dest domain.Dest, data []byte) (ports.RemoteResult, error) {
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
