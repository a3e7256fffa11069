//go:build peerctlfault

package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// faultEnv names the point at which a service of a peerctlfault build
// (the tests', never a release: fault.go is the other builds') pauses
// once, so that a test can stop it there with a signal and compare what
// its client said with what the outbox and the transcript say:
//
//   - "store": a durable send was read, nothing is stored yet;
//   - "stored": the message is stored, its client not yet told;
//   - "deliver": the message is delivering, the transport not yet run;
//   - "handed": the harness has the message (its receipt, confirmed),
//     the outbox not yet told.
//
// The service logs "fault point P reached" and waits there until the
// request or the service's life ends (its client hangs up, SIGTERM),
// then goes on as it would have.
const faultEnv = "PEERCTL_FAULT"

// faulty is store pausing at $PEERCTL_FAULT's point (none set: store)
// until the call's context or life ends.
func faulty(life context.Context, store ports.Outbox, log io.Writer) ports.Outbox {
	point := os.Getenv(faultEnv)
	if point == "" {
		return store
	}
	return &faultStore{Outbox: store, life: life, point: point, log: log}
}

type faultStore struct {
	ports.Outbox
	life  context.Context
	point string
	log   io.Writer
	once  sync.Once
}

// at pauses at point p when it is the store's, the first time only.
func (f *faultStore) at(ctx context.Context, p string) {
	if p != f.point {
		return
	}
	f.once.Do(func() {
		fmt.Fprintf(f.log, "peerctl serve: fault point %s reached (%s)\n", p, faultEnv)
		select {
		case <-ctx.Done():
		case <-f.life.Done():
		}
	})
}

func (f *faultStore) Put(ctx context.Context, m ports.OutboxMessage) (ports.OutboxMessage, bool, error) {
	f.at(ctx, "store")
	got, created, err := f.Outbox.Put(ctx, m)
	if err == nil && created {
		f.at(ctx, "stored")
	}
	return got, created, err
}

func (f *faultStore) Move(ctx context.Context, id int64, from []domain.OutboxState, c ports.OutboxChange) (ports.OutboxMessage, error) {
	if slices.Contains(from, domain.OutboxDelivering) && (c.State.Handed() || c.State == domain.OutboxOutcomeUnknown) {
		f.at(ctx, "handed")
	}
	m, err := f.Outbox.Move(ctx, id, from, c)
	if err == nil && c.State == domain.OutboxDelivering && c.Attempt {
		f.at(ctx, "deliver")
	}
	return m, err
}
