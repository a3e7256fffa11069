package natsbus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/peerctl/peerctl/adapters/busnode"
	"github.com/peerctl/peerctl/domain"
)

// Node is a node of the fleet's bus ("nats:NODE") as a node of the use
// cases (app.Node, as this machine's app.LocalNode and an ssh host's
// sshhost.Node): its requests are busnode.Node's, each carried on a
// connection of its own; its Watch follows its presence.
type Node struct {
	*busnode.Node
	s       Settings
	dest    domain.Dest
	node    string
	timeout time.Duration
}

// NewNode is dest's service (dest a node: domain.Dest.Node), reached as s
// says (s.Node: this machine's name, the sender), each call bounded by
// timeout (> 0).
func NewNode(s Settings, dest domain.Dest, timeout time.Duration) (*Node, error) {
	if _, err := domain.ParseNode(s.Node); err != nil {
		return nil, fmt.Errorf("this machine's node name: %w", err)
	}
	n, err := busnode.New(dial{s}, dest, timeout)
	if err != nil {
		return nil, err
	}
	node, _ := dest.Node()
	return &Node{Node: n, s: s, dest: dest, node: node, timeout: timeout}, nil
}

// dial carries each request on a connection of its own (busnode.Carrier).
type dial struct{ s Settings }

// Carry connects as d.s says and carries request to node to.
func (d dial) Carry(ctx context.Context, to string, request []byte) ([]byte, error) {
	s := d.s
	if s.Name == "" {
		s.Name = "peerctl --host nats:" + to
	}
	bus, err := Connect(s, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", busnode.ErrNotSent, err)
	}
	defer bus.Close()
	return bus.carry(ctx, s.Node, to, request)
}

// Carrier is the bus's connection as a busnode.Carrier: the service's
// own, which carries this machine's commands' requests as from node
// (peerctl serve's "bus" op), so that they make no connection of their
// own.
func (b *Bus) Carrier(node string) busnode.Carrier { return warm{b, node} }

type warm struct {
	b    *Bus
	node string
}

func (w warm) Carry(ctx context.Context, to string, request []byte) ([]byte, error) {
	if !w.b.Connected() {
		return nil, fmt.Errorf("%w: the service is not connected to the bus now", busnode.ErrNotSent)
	}
	return w.b.carry(ctx, w.node, to, request)
}

// carry sends request to node to as from node from and waits for its
// answer (busnode.Carrier's errors).
func (b *Bus) carry(ctx context.Context, from, to string, request []byte) ([]byte, error) {
	msg, err := b.nc.RequestWithContext(ctx, RequestSubject(to, from), request)
	if err == nil {
		return msg.Data, nil
	}
	if last := b.Refusal(); last != nil {
		return nil, fmt.Errorf("%w: %w", busnode.ErrNotSent, last) // the servers refused the request: it never went out
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w: %w", busnode.ErrNoService, err)
	}
	return nil, err
}
