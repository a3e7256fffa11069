package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// warmCourierTransport is a default transport that can also start couriers,
// as Claude Code's courier can.
type warmCourierTransport struct {
	mu      sync.Mutex
	oneShot int
	started []*warmFakeCourier
}

func (c *warmCourierTransport) Name() string { return "courier" }

func (c *warmCourierTransport) Deliver(context.Context, domain.Session, domain.Message) (domain.Receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.oneShot++
	return domain.Receipt{Transport: "courier", Outcome: "queued", MsgID: "one-shot"}, nil
}

func (c *warmCourierTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: "courier"}, nil
}

func (c *warmCourierTransport) StartCourier(context.Context) (ports.Courier, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &warmFakeCourier{done: make(chan struct{}), notices: make(chan domain.Notice, 4), inbound: make(chan domain.Inbound)}
	c.started = append(c.started, f)
	return f, nil
}

type warmFakeCourier struct {
	mu      sync.Mutex
	sends   int
	done    chan struct{}
	notices chan domain.Notice
	inbound chan domain.Inbound
	once    sync.Once
}

func (f *warmFakeCourier) Send(_ context.Context, _ domain.Session, m domain.Message) (domain.Receipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends++
	return domain.Receipt{Transport: "courier", Outcome: "queued", MsgID: fmt.Sprintf("warm-%d", f.sends)}, nil
}
func (f *warmFakeCourier) Inbound() <-chan domain.Inbound { return f.inbound }
func (f *warmFakeCourier) Notices() <-chan domain.Notice  { return f.notices }
func (f *warmFakeCourier) Done() <-chan struct{}          { return f.done }
func (f *warmFakeCourier) Close() error {
	f.once.Do(func() { close(f.done) })
	return nil
}

func TestWarmKeepsOneCourierAndRestartsADeadOne(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct := &warmCourierTransport{}
	warm := app.NewWarm(ctx)
	defer warm.Close()
	router := &app.Router{By: map[domain.Harness][]ports.Transport{domain.HarnessClaudeCode: {ct}}}
	tr := warm.Wrap(router)
	target := domain.NewDormantSession(record(4652, idA, "proj-89"))
	msg, err := domain.NewMessage("hi")
	require.NoError(t, err)
	for i := 1; i <= 3; i++ {
		rec, err := tr.Deliver(ctx, target, msg)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("warm-%d", i), rec.MsgID)
	}
	// A later invocation's Router (the same settings) uses the same courier.
	rec, err := warm.Wrap(&app.Router{By: map[domain.Harness][]ports.Transport{domain.HarnessClaudeCode: {ct}}}).Deliver(ctx, target, msg)
	require.NoError(t, err)
	assert.Equal(t, "warm-4", rec.MsgID)
	assert.Equal(t, 1, warm.Starts())
	assert.Zero(t, ct.oneShot)
	ct.started[0].Close()
	_, err = tr.Deliver(ctx, target, msg)
	require.NoError(t, err)
	assert.Equal(t, 2, warm.Starts())
	// A transport chosen by name is not made warm.
	_, err = warm.Wrap(&app.Router{Chosen: "courier", By: router.By}).Deliver(ctx, target, msg)
	require.NoError(t, err)
	assert.Equal(t, 1, ct.oneShot)
}

func TestWarmHeedTurnsTheReceiptOnANotice(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct := &warmCourierTransport{}
	warm := app.NewWarm(ctx)
	defer warm.Close()
	tr := warm.Wrap(&app.Router{By: map[domain.Harness][]ports.Transport{domain.HarnessClaudeCode: {ct}}}).(ports.Heeding)
	target := domain.NewDormantSession(record(4652, idA, "proj-89"))
	msg, _ := domain.NewMessage("hi")
	rec, heed, err := tr.DeliverHeeding(ctx, target, msg)
	require.NoError(t, err)
	ct.started[0].notices <- domain.Notice{MsgID: rec.MsgID, Verdict: "held", Text: "held for later"}
	hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
	defer hcancel()
	out, err := heed(hctx)
	require.NoError(t, err)
	assert.Equal(t, "held", out.Outcome)
	// No notice: the receipt stands when the window ends.
	rec, heed, err = tr.DeliverHeeding(ctx, target, msg)
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer wcancel()
	out, err = heed(wctx)
	require.NoError(t, err)
	assert.Equal(t, rec, out)
}
