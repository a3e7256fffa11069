package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// A running service on the fleet's bus carries this machine's requests
// to other nodes: a command given --host nats:NODE hands its typed
// request to the service (its "bus" op) instead of starting peerctl-mcp
// and connecting, and reads the node's answer itself (busnode.Node), so
// that what it trusts does not move (docs/FLEET.md).

// serviceOnBusWithin bounds the look at the service (a ping on its
// socket).
const serviceOnBusWithin = 2 * time.Second

// serviceOnBus is the status of this state folder's running service when
// it is on the fleet's bus now, on the servers s.URLs (as given) and as
// s.Node (any node when ""): the one a command of this machine reaching
// the bus s says asks instead of starting peerctl-mcp and connecting.
// ok is false when none is (no service, PEERCTL_SERVE=off, other servers
// or another node's name, not on the bus now, or it does not say).
func (c *factory) serviceOnBus(ctx context.Context, s wiring.BusSettings) (st *serve.Status, ok bool) {
	if c.serveClient().serveOff() {
		return nil, false
	}
	p, err := serve.PathsFor(c.getenv)
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, serviceOnBusWithin)
	defer cancel()
	conn, a, err := askServe(ctx, p, "ping")
	if err != nil {
		return nil, false
	}
	_ = conn.Close()
	b := a.Status.Bus
	if b == nil || !b.OnBus || (s.Node != "" && b.Node != s.Node) || serve.SameServers(b.Servers) != serve.SameServers(wire.RedactURLs(s.URLs)) {
		return nil, false
	}
	return a.Status, true
}

// serviceCarrier carries a request to a node of the bus through this
// machine's service (wiring.BusCarrier): one connection to its socket, one
// "bus" request, its one answer.
type serviceCarrier struct {
	c *serveClient
	// servers are the bus's, as this command was given them.
	servers string
}

// Carry hands request for node to to the service and returns the node's
// answer. A request that did not reach the service whole, or that the
// service could not send, wraps wiring.ErrBusNotSent; a service that had it
// and ended (or hung up) before its answer is an error of its own: the
// request may have gone out.
func (sc serviceCarrier) Carry(ctx context.Context, to string, request []byte) ([]byte, error) {
	conn, err := sc.c.dialServe(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("%w: this machine's peerctl serve: %w", wiring.ErrBusNotSent, err)
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := serve.WriteLine(conn, serve.Request{V: serve.Protocol, Op: "bus", Bus: sc.servers, Node: to, Carry: request}); err != nil {
		return nil, fmt.Errorf("%w: this machine's peerctl serve: %w", wiring.ErrBusNotSent, err)
	}
	var a serve.Answer
	if err := serve.ReadLine(bufio.NewReader(conn), &a); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("this machine's peerctl serve, which carried it, gave no answer (%w)", err)
	}
	why := errors.New(safe(string(a.Error)))
	switch {
	case a.Bus != nil && a.BusFault == "":
		return a.Bus, nil
	case a.BusFault == serve.BusNoService:
		return nil, fmt.Errorf("%w: %w", wiring.ErrBusNoService, why)
	case a.BusFault == serve.BusUnanswered:
		return nil, fmt.Errorf("this machine's peerctl serve carried it: %w", why)
	case a.BusFault == serve.BusBroken:
		return nil, fmt.Errorf("%w: %w", wiring.ErrBusBroken, why)
	}
	return nil, fmt.Errorf("%w: this machine's peerctl serve: %w", wiring.ErrBusNotSent, why)
}
