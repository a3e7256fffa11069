package cli

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/ports"
)

// gateRegistry stands for a send's work: each Read reports itself on
// entered and waits until the test lets it go.
type gateRegistry struct {
	entered        chan chan struct{}
	inFlight, most atomic.Int64
}

func (r *gateRegistry) Read(ctx context.Context) (ports.Snapshot, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for m := r.most.Load(); n > m && !r.most.CompareAndSwap(m, n); m = r.most.Load() {
	}
	done := make(chan struct{})
	select {
	case r.entered <- done:
	case <-ctx.Done():
		return ports.Snapshot{}, ctx.Err()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	return ports.Snapshot{}, nil
}

type noTransport struct{}

func (noTransport) Name() string { return "none" }
func (noTransport) Deliver(context.Context, domain.Session, domain.Message) (domain.Receipt, error) {
	panic("never reached: the registry is empty")
}
func (noTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	panic("never reached")
}

// Many send_message calls at once are queued, not all run together (20
// couriers at once on a busy machine all ran out of time): at most
// maxConcurrentSends run, each with its whole --call-timeout from when it
// starts, and every call is served.
func TestMCPSendsQueue(t *testing.T) {
	reg := &gateRegistry{entered: make(chan chan struct{}, 64)}
	svc := app.New(reg, deadLiveness{}, noTransport{}, "")
	m := &mcpTools{callTimeout: time.Minute, service: func(string) (*app.Service, error) { return svc, nil }}
	send := m.tools().Send
	const calls = 20
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := send(t.Context(), nil, mcptools.SendArgs{To: "someone", Text: "hi"})
			errs <- err
		}()
	}
	// With every call started, as many as may run are running and the
	// rest wait their turn (unbounded, all 20 would be reading).
	var held []chan struct{}
	for range maxConcurrentSends {
		held = append(held, <-reg.entered)
	}
	require.Eventually(t, func() bool { return m.sendQueue().waiting() == calls-maxConcurrentSends || len(reg.entered) > 0 },
		time.Minute, time.Millisecond)
	require.Zero(t, len(reg.entered), "a call ran beyond the bound")
	for _, h := range held {
		close(h)
	}
	for range calls - maxConcurrentSends {
		close(<-reg.entered)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.Error(t, err)
		assert.Contains(t, err.Error(), domain.ReasonNotLive.String(), "served, not timed out")
	}
	assert.LessOrEqual(t, reg.most.Load(), int64(maxConcurrentSends))
}

// A call cancelled while it waits its turn ends at once, without running.
func TestMCPQueuedSendIsCancellable(t *testing.T) {
	reg := &gateRegistry{entered: make(chan chan struct{})}
	svc := app.New(reg, deadLiveness{}, noTransport{}, "")
	m := &mcpTools{callTimeout: time.Minute, service: func(string) (*app.Service, error) { return svc, nil }}
	send := m.tools().Send
	var running []chan struct{}
	var wg sync.WaitGroup
	for range maxConcurrentSends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = send(t.Context(), nil, mcptools.SendArgs{To: "someone", Text: "hi"})
		}()
		running = append(running, <-reg.entered)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := send(ctx, nil, mcptools.SendArgs{To: "someone", Text: "queued"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(maxConcurrentSends), reg.most.Load(), "the cancelled call never ran")
	for _, r := range running {
		close(r)
	}
	wg.Wait()
}
