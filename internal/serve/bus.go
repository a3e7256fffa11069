package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/jsonexact"
	"github.com/peerctl/peerctl/ports/wire"
)

// The "bus" op: a command of this machine given --host nats:NODE hands
// its typed request (wiring.BusRequest, as the bus carries it) to the
// service, which carries it over its own connection to the fleet's bus
// (as its node: the sender the servers let it be) and returns the node's
// answer as it came, bounded. The command reads that answer itself, as it
// reads one it carried (busnode.Node: exact keys, wire.Agrees), so the
// service only saves it a program start and a connection
// (docs/SERVE.md, docs/FLEET.md).

// maxBusBudget bounds how long the service carries one request, whatever
// its caller said it waits (the node works on it no longer either).
const maxBusBudget = time.Hour

// Bus faults: why a "bus" request got no answer of the node's
// (Answer.BusFault). BusNotSent: the request never left this machine;
// BusNoService: no service takes the node's requests (nothing was sent);
// BusUnanswered: it went out and no answer came; BusBroken: what came is
// no answer.
const (
	BusNotSent    = "not_sent"
	BusNoService  = "no_service"
	BusUnanswered = "unanswered"
	BusBroken     = "broken"
)

// BusLink is a service's place on the fleet's bus: its node and servers
// as configured, and its connection once the node is on the bus and
// takes requests (Set; nil before and after).
type BusLink struct {
	node, servers string
	mu            sync.Mutex
	carry         wiring.BusCarrier
}

// NewBusLink is the place of a service joining the bus servers as node.
func NewBusLink(node, servers string) *BusLink { return &BusLink{node: node, servers: servers} }

// Set is called with the service's connection once its node is on the
// bus, and with nil when it leaves.
func (l *BusLink) Set(c wiring.BusCarrier) {
	l.mu.Lock()
	l.carry = c
	l.mu.Unlock()
}

func (l *BusLink) carrier() wiring.BusCarrier {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.carry
}

// BusStatus is a service's place on the fleet's bus in its status: its
// node's name, its servers as given (--nats, $PEERCTL_NATS; a password or
// token in them written xxxxx: wire.RedactURLs), and whether
// the node is on the bus now (it carries this machine's --host nats:NODE
// requests then).
type BusStatus struct {
	Node    string `json:"node"`
	Servers string `json:"servers"`
	OnBus   bool   `json:"onBus"`
}

// status is l as the service's status says it (nil: no bus).
func (l *BusLink) status() *BusStatus {
	if l == nil {
		return nil
	}
	return &BusStatus{Node: l.node, Servers: wire.RedactURLs(l.servers), OnBus: l.carrier() != nil}
}

// carryBus answers a "bus" request: req.Bus, a wiring.BusRequest of this
// build, carried to node req.Node, bounded by its budget (at most an
// hour); the answer is the node's bytes when they are an answer of at
// most wiring.MaxBusAnswerBytes, else a fault saying why there is none.
func (s *Server) carryBus(ctx context.Context, req Request) Answer {
	fault := func(kind string, err error) Answer {
		return Answer{Done: true, Code: wire.ExitError, Error: []byte(err.Error()), BusFault: kind}
	}
	carry := s.o.Bus.carrier()
	if carry == nil {
		why := "this service is on no fleet's bus (serve --nats, $PEERCTL_NATS)"
		if s.o.Bus != nil {
			why = fmt.Sprintf("this service (node %s) is not on the fleet's bus now", s.o.Bus.node)
		}
		return fault(BusNotSent, errors.New(why))
	}
	if SameServers(req.Bus) != SameServers(s.o.Bus.servers) {
		return fault(BusNotSent, fmt.Errorf("this service is on the bus %s, not %s", wire.Safe(wire.RedactURLs(s.o.Bus.servers)), wire.Safe(wire.Clip(wire.RedactURLs(req.Bus), 200))))
	}
	node, err := domain.ParseNode(req.Node)
	if err != nil {
		return fault(BusNotSent, fmt.Errorf("a bus request for node %q: %w", wire.Clip(req.Node, 100), err))
	}
	var r wiring.BusRequest
	if err := jsonexact.Exact(req.Carry, &r); err != nil {
		return fault(BusNotSent, fmt.Errorf("a bus request that is none: %w", err))
	}
	if r.V != wiring.BusRequestVersion {
		return fault(BusNotSent, fmt.Errorf("a bus request of version %d; this service carries %d (stop the service: it is an older or newer peerctl)", r.V, wiring.BusRequestVersion))
	}
	ctx, cancel := context.WithTimeout(ctx, min(max(r.Budget, time.Second), maxBusBudget))
	defer cancel()
	data, err := carry.Carry(ctx, node, req.Carry)
	switch {
	case errors.Is(err, wiring.ErrBusNoService):
		return fault(BusNoService, err)
	case errors.Is(err, wiring.ErrBusNotSent):
		return fault(BusNotSent, err)
	case err != nil:
		return fault(BusUnanswered, err)
	}
	// The command checks the answer whole; the service keeps what it
	// passes on bounded and an answer.
	if len(data) > wiring.MaxBusAnswerBytes {
		return fault(BusBroken, fmt.Errorf("an answer of %d bytes, over %d", len(data), wiring.MaxBusAnswerBytes))
	}
	var a map[string]json.RawMessage
	if err := json.Unmarshal(data, &a); err != nil {
		return fault(BusBroken, fmt.Errorf("an answer that is none: %w", err))
	}
	return Answer{Done: true, Bus: data}
}

// SameServers is a server list written one way, no spaces around its
// commas: two lists name the same bus when theirs are equal.
func SameServers(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return strings.Join(parts, ",")
}
