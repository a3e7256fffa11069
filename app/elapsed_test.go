package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// stepClock is a clock that moves only when told.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *stepClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// slowTranscripts confirms (or not) after the clock moved by took.
type slowTranscripts struct {
	clock   *stepClock
	took    time.Duration
	confirm bool
}

func (s *slowTranscripts) Mark(string) ports.TranscriptMark { return ports.TranscriptMark{} }

func (s *slowTranscripts) WaitEnqueued(_ context.Context, q ports.EnqueueQuery) (domain.Enqueued, error) {
	s.clock.advance(s.took)
	if !s.confirm {
		return domain.Enqueued{}, context.DeadlineExceeded
	}
	return domain.Enqueued{At: q.Since}, nil
}

func (s *slowTranscripts) TakenUp(context.Context, string, string, int64, time.Time) (time.Time, int64, error) {
	return time.Time{}, 0, nil
}

// A send reports the transport's own time apart from the transcript
// confirmation's: a socket post of 2 ms followed by a 5 s confirmation
// wait is "2 ms by the transport, 5 s confirming", not "5.002 s".
func TestSendTimesTransportAndConfirmationApart(t *testing.T) {
	for _, confirm := range []bool{true, false} {
		cfg := t.TempDir()
		startFake(t, cfg, idA, "proj-89")
		clock := &stepClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
		tr := &cueTransport{outcome: "posted", cue: func(string) { clock.advance(2 * time.Millisecond) }}
		svc := app.New(fsregistry.New(fsregistry.SessionsDir(cfg)), procliveness.New(), tr, cfg,
			app.WithClock(clock.now), app.WithTranscripts(&slowTranscripts{clock: clock, took: 5 * time.Second, confirm: confirm}))
		res, err := svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "hi"})
		require.NoError(t, err)
		assert.Equal(t, confirm, res.Confirmed)
		assert.Equal(t, 2*time.Millisecond, res.TransportElapsed, "confirmed %v", confirm)
		assert.Equal(t, 5*time.Second, res.ConfirmElapsed, "confirmed %v", confirm)
		assert.Equal(t, 5*time.Second+2*time.Millisecond, res.Elapsed, "confirmed %v", confirm)

		res, err = svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "hi", ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
		require.NoError(t, err)
		assert.Equal(t, 2*time.Millisecond, res.TransportElapsed)
		assert.Zero(t, res.ConfirmElapsed, "no confirmation read")
	}
}

// --await-reply and the relay send on a courier of their own: the
// transport's time is the courier's start and its send (a relay's courier
// starts with the relay, so its sends are the send alone), not 0.
func TestCourierSendsTimeTheTransport(t *testing.T) {
	cfg := t.TempDir()
	startFake(t, cfg, idA, "proj-89")
	clock := &stepClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	fc := &fakeCouriers{onStart: func() { clock.advance(800 * time.Millisecond) }, onSend: func() { clock.advance(200 * time.Millisecond) }}
	svc := app.New(fsregistry.New(fsregistry.SessionsDir(cfg)), procliveness.New(), &cueTransport{outcome: "posted"}, cfg,
		app.WithClock(clock.now), app.WithCouriers(fc))
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "hi", AwaitReply: time.Millisecond,
		ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "no reply: %v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Equal(t, time.Second, res.TransportElapsed, "the courier's start and send")

	relay, err := app.StartRelay(context.Background(), svc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Stop(context.Background()) })
	res, err = relay.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "one"})
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, res.TransportElapsed, "the relay's courier's send")
	res, err = relay.Send(context.Background(), app.SendRequest{Address: "proj-89", Text: "two"})
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, res.TransportElapsed, "the warm courier's send")
}
