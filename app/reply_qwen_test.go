package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/portsmock"
)

// qwenRecord is a live Qwen Code record; its inbox (ipcPath) is
// /tmp/qwen-socks/<pid>.sock.
func qwenRecord(pid int, id, name string) domain.Record {
	r := record(pid, id, name)
	r.Harness, r.Kind, r.Version = qwenregistry.Kind, "tui", "0.24.4"
	r.SocketPath = "/tmp/qwen-socks/" + name + ".sock"
	return r
}

// harnessWorld is a Service whose couriers are per harness (as the fx graph
// builds them): "solo" is a Claude Code session, "qw-3b" a Qwen Code one.
func harnessWorld(t *testing.T) (*app.Service, *fakeCouriers, *fakeCouriers) {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	cc, qc := &fakeCouriers{}, &fakeCouriers{}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithCouriers(app.HarnessCouriers{
		domain.HarnessClaudeCode: cc, qwenregistry.Kind: qc}), app.WithHarnesses(plugins(t)))
	w.registry([]domain.Record{record(6000, idC, "solo"), qwenRecord(7100, idB, "qw-3b")})
	return w.svc, cc, qc
}

// A Qwen Code target's reply is a user frame whose from is the session's
// ipcPath as is; a "uds:" address naming the same path is not Qwen Code's
// way of naming it, so it is another sender's message.
func TestSendAwaitReplyQwenCode(t *testing.T) {
	svc, cc, qc := harnessWorld(t)
	now := time.Now()
	notIt := domain.NewInbound("uds:/tmp/qwen-socks/qw-3b.sock", "qw-3b", "not the reply", now)
	reply := domain.NewInbound("/tmp/qwen-socks/qw-3b.sock", "qw-3b", "the answer", now)
	feed(t, qc, notIt, reply)
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "qw-3b", Text: "question", AwaitReply: time.Minute})
	require.NoError(t, err)
	require.NotNil(t, res.Reply)
	assert.Equal(t, reply, *res.Reply)
	assert.Equal(t, []domain.Inbound{notIt}, res.OtherInbound)
	assert.Equal(t, 0, cc.count(), "Claude Code's courier is not started for a Qwen Code target")
	assert.True(t, qc.get(0).closed.Load())
}

func TestSendAwaitReplyQwenCodeNoReply(t *testing.T) {
	svc, _, qc := harnessWorld(t)
	feed(t, qc, domain.NewInbound("/tmp/qwen-socks/other.sock", "other", "noise", time.Now()))
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "qw-3b", Text: "question", AwaitReply: 300 * time.Millisecond})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Len(t, res.OtherInbound, 1)
	assert.Equal(t, "c1-m1-question", res.Receipt.MsgID)
}

// One relay sends to both harnesses: each send goes to its harness's
// courier, and both couriers' inbound messages come out of Inbound.
func TestRelayServesBothHarnesses(t *testing.T) {
	svc, cc, qc := harnessWorld(t)
	relay, err := app.StartRelay(context.Background(), svc)
	require.NoError(t, err)
	defer func() { _ = relay.Stop(context.Background()) }()
	require.Equal(t, 1, cc.count())
	require.Equal(t, 1, qc.count())
	for _, to := range []string{"solo", "qw-3b", "solo"} {
		res, err := relay.Send(context.Background(), app.SendRequest{Address: to, Text: "hi"})
		require.NoError(t, err, to)
		assert.Equal(t, to, res.Target.Name())
	}
	assert.Equal(t, int32(2), cc.get(0).sends.Load())
	assert.Equal(t, int32(1), qc.get(0).sends.Load())
	cc.get(0).inbound <- domain.NewInbound("uds:/tmp/cc-socks/6000.sock", "solo", "from claude", time.Now())
	qc.get(0).inbound <- domain.NewInbound("/tmp/qwen-socks/qw-3b.sock", "qw-3b", "from qwen", time.Now())
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case in := <-relay.Inbound():
			got[in.Text] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("inbound so far: %v", got)
		}
	}

	// The Qwen Code inbox ending ends the joined courier: the relay starts
	// both anew, and the next send still ends in a receipt.
	qc.get(0).die()
	require.Eventually(t, func() bool { return qc.count() == 2 && cc.count() == 2 }, 10*time.Second, 10*time.Millisecond)
	_, err = relay.Send(context.Background(), app.SendRequest{Address: "qw-3b", Text: "again"})
	require.NoError(t, err)
	assert.Equal(t, int32(1), qc.get(1).sends.Load())
}

// plugins are the real harness plug-ins over empty temporary homes: the
// Service takes each record's confirmation rule and transcript from them.
func plugins(t *testing.T) app.Harnesses {
	home := t.TempDir()
	settings := ports.HarnessSettings{Flags: testHomes(home)}
	var hs []ports.Harness
	for _, p := range wiring.Plugins() {
		h, err := p.New(settings)
		require.NoError(t, err)
		hs = append(hs, h)
	}
	return app.NewHarnesses(hs)
}
