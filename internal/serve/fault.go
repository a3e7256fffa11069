//go:build !peerctlfault

package serve

import (
	"context"
	"io"

	"github.com/peerctl/peerctl/ports"
)

// faulty is store as the service's use cases write it. In a build with
// the peerctlfault tag (the tests' only, fault_on.go) it can pause at a
// named point of a durable send; in every other build, this one, it is
// store itself: nothing in the environment can pause the service.
func faulty(_ context.Context, store ports.Outbox, _ io.Writer) ports.Outbox { return store }
