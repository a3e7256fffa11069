package wiring

import (
	"time"

	"github.com/peerctl/peerctl/adapters/busnode"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
)

// The fleet's bus requests as the service carries them for this
// machine's commands (serve's "bus" op; adapters/busnode, which links no
// NATS package).
type (
	// BusCarrier takes a request to a node's service (busnode.Carrier).
	BusCarrier = busnode.Carrier
	// BusRequest is a typed request to a node (busnode.Request).
	BusRequest = busnode.Request
)

const (
	// BusRequestVersion is the version of BusRequest this build speaks.
	BusRequestVersion = busnode.RequestVersion
	// MaxBusAnswerBytes bounds a node's answer.
	MaxBusAnswerBytes = busnode.MaxAnswerBytes
)

var (
	// ErrBusNotSent, ErrBusNoService and ErrBusBroken are a BusCarrier's
	// errors (busnode.ErrNotSent, ErrNoService, ErrBroken).
	ErrBusNotSent   = busnode.ErrNotSent
	ErrBusNoService = busnode.ErrNoService
	ErrBusBroken    = busnode.ErrBroken
)

// NewBusNode is the node of the bus dest names (nats:NODE) whose requests
// carry carries, each call bounded by timeout (busnode.Node): this
// machine's service's connection, when it is on the bus.
func NewBusNode(carry BusCarrier, dest domain.Dest, timeout time.Duration) (app.Node, error) {
	return busnode.New(carry, dest, timeout)
}
