package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/portsmock"
)

// awaitWorld is a Service with fake couriers; "solo" (pid 6000) is the
// target, its socket /tmp/cc-socks/6000.sock.
func awaitWorld(t *testing.T) (*app.Service, *fakeCouriers) {
	return awaitWorldWith(t, func(*domain.Record) {})
}

// awaitWorldWith is awaitWorld with the target's record changed by edit.
func awaitWorldWith(t *testing.T, edit func(*domain.Record)) (*app.Service, *fakeCouriers) {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	fc := &fakeCouriers{}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithCouriers(fc))
	rec := record(6000, idC, "solo")
	edit(&rec)
	w.registry([]domain.Record{rec})
	return w.svc, fc
}

// feed hands the courier's inbound messages once it has started.
func feed(t *testing.T, fc *fakeCouriers, ins ...domain.Inbound) {
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for fc.count() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		for _, in := range ins {
			fc.get(0).inbound <- in
		}
	}()
}

func TestSendAwaitReply(t *testing.T) {
	svc, fc := awaitWorld(t)
	now := time.Now()
	other := domain.NewInbound("uds:/tmp/cc-socks/7000.sock", "other", "not for you", now)
	reply := domain.NewInbound("uds:/tmp/cc-socks/6000.sock", "solo", "the answer", now)
	feed(t, fc, other, reply)
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "solo", Text: "question",
		AwaitReply: time.Minute, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	require.NoError(t, err)
	require.NotNil(t, res.Reply)
	assert.Equal(t, "the answer", res.Reply.Text)
	assert.Equal(t, []domain.Inbound{other}, res.OtherInbound)
	assert.Equal(t, "c1-m1-question", res.Receipt.MsgID)
	assert.True(t, fc.get(0).closed.Load(), "the courier is closed once the reply came")
}

func TestSendAwaitReplyNoReply(t *testing.T) {
	svc, fc := awaitWorld(t)
	feed(t, fc, domain.NewInbound("uds:/tmp/cc-socks/7000.sock", "other", "noise", time.Now()))
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "solo", Text: "question",
		AwaitReply: 300 * time.Millisecond, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Contains(t, r.Detail, "c1-m1-question", "the detail names the message handed over")
	assert.Nil(t, res.Reply)
	assert.Len(t, res.OtherInbound, 1)
	assert.Equal(t, "c1-m1-question", res.Receipt.MsgID, "the receipt comes back with the refusal")
	assert.True(t, fc.get(0).closed.Load())
}

func TestSendAwaitReplyCourierDies(t *testing.T) {
	svc, fc := awaitWorld(t)
	go func() {
		for fc.count() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		fc.get(0).die()
	}()
	_, err := svc.Send(context.Background(), app.SendRequest{Address: "solo", Text: "q",
		AwaitReply: time.Minute, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Contains(t, r.Detail, "courier ended")
}

func TestSendAwaitReplyInterrupted(t *testing.T) {
	svc, _ := awaitWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := svc.Send(ctx, app.SendRequest{Address: "solo", Text: "q", AwaitReply: time.Hour, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Contains(t, r.Detail, "but the wait was interrupted before a reply came")
}

// A held notice about our message turns the receipt as in a plain send.
func TestSendAwaitReplyHeedsNotices(t *testing.T) {
	svc, fc := awaitWorld(t)
	go func() {
		for fc.count() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		fc.get(0).notices <- domain.Notice{MsgID: "c1-m1-q", Verdict: "held", Text: "held"}
		fc.get(0).inbound <- domain.NewInbound("uds:/tmp/cc-socks/6000.sock", "solo", "later", time.Now())
	}()
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "solo", Text: "q", AwaitReply: time.Minute,
		ConfirmOptions: app.ConfirmOptions{ConfirmTimeout: 300 * time.Millisecond}})
	require.NoError(t, err)
	assert.Equal(t, "held", res.Receipt.Outcome)
	assert.Equal(t, "later", res.Reply.Text)
}

func TestSendAwaitReplyNeedsCouriers(t *testing.T) {
	w := newWorld(t, "/cfg")
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "solo", Text: "q", AwaitReply: time.Minute})
	assert.ErrorIs(t, err, app.ErrNoCouriers)
}

// A plain ports.Couriers (not HarnessCouriers) is Claude Code's courier
// only: a Qwen Code target is refused before any courier starts, by
// --await-reply and by the relay alike.
func TestPlainCouriersRefuseQwenCode(t *testing.T) {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	fc := &fakeCouriers{}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithCouriers(fc))
	q := record(7100, idB, "qwen-one")
	q.Harness = qwenregistry.Kind
	w.registry([]domain.Record{record(6000, idC, "solo"), q})
	_, err := w.svc.Send(context.Background(), app.SendRequest{Address: idB, Text: "q", AwaitReply: time.Minute})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
	assert.Equal(t, 0, fc.count(), "no courier started")

	relay, err := app.StartRelay(context.Background(), w.svc)
	require.NoError(t, err)
	defer func() { _ = relay.Stop(context.Background()) }()
	_, err = relay.Send(context.Background(), app.SendRequest{Address: idB, Text: "q"})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
	assert.Equal(t, int32(0), fc.get(0).sends.Load())
}

// A reply wait ends when the target ends (--wait's rule: its record
// removed and its pid gone, or its pid gone with the record left), saying
// so, instead of listening until its time is up.
func TestSendAwaitReplyEndsWhenTheTargetEnds(t *testing.T) {
	for _, v := range variants() {
		for _, end := range []string{"exit", "crash"} {
			t.Run(v.name+"/"+end, func(t *testing.T) {
				t.Parallel()
				cfg := t.TempDir()
				f := startFake(t, cfg, idA, "proj-89")
				f.backdate(time.Minute)
				var tr traced
				trace := tr.trace(func() {
					if end == "exit" {
						f.exit()
					} else {
						f.crash()
					}
				})
				ctx, cancel := context.WithTimeout(app.WithSendTrace(context.Background(), trace), 2*within)
				defer cancel()
				opts := append(v.opts(), app.WithCouriers(&fakeCouriers{}))
				svc := app.New(fsregistry.New(fsregistry.SessionsDir(cfg)), procliveness.New(), &cueTransport{outcome: "posted"}, cfg, opts...)
				res, err := svc.Send(ctx, app.SendRequest{Address: "proj-89", Text: "question",
					AwaitReply: time.Hour, ConfirmOptions: app.ConfirmOptions{NoConfirm: true}})
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, domain.ReasonNoReply, r.Reason)
				assert.NotContains(t, r.Detail, "interrupted", "ended by the target's end, not the test's deadline")
				assert.Contains(t, r.Detail, "the session ended (")
				assert.Contains(t, r.Detail, fmt.Sprintf("pid %d", f.PID()))
				assert.NotRegexp(t, `ended \([^)]*ended\)`, r.Detail, "the end said once")
				assert.Nil(t, res.Reply)
				assert.NotEmpty(t, res.Receipt.MsgID, "the receipt comes back with the refusal")
			})
		}
	}
}
