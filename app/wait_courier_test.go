package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/portsmock"
	"github.com/peerctl/peerctl/ports/wire"
)

// codexThread is a live Codex thread a daemon-mode TUI (pid) has open.
const codexThread = "0199a0b1-2c3d-7e4f-8a9b-0c1d2e3f4a5b"

func codexRecord(pid int, name string) domain.Record {
	r := record(pid, codexThread, name)
	r.Harness, r.Kind, r.File, r.Version = codex.Kind, codex.KindClient, codexThread, "0.171.0"
	r.SocketPath = "/tmp/codex-daemon/app.sock"
	return r
}

// waitWorld is harnessWorld with a Codex thread "cx-1" beside the Qwen Code
// session "qw-3b", each harness with couriers of its own.
func waitWorld(t *testing.T) (svc *app.Service, qwen, cdx *fakeCouriers) {
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl), trans: portsmock.NewMockTransport(ctrl)}
	qwen, cdx = &fakeCouriers{}, &fakeCouriers{}
	w.svc = app.New(w.reg, w.live, w.trans, "/cfg", app.WithCouriers(app.HarnessCouriers{
		domain.HarnessClaudeCode: &fakeCouriers{}, qwenregistry.Kind: qwen, codex.Kind: cdx}), app.WithHarnesses(plugins(t)))
	w.registry([]domain.Record{qwenRecord(7100, idB, "qw-3b"), codexRecord(7200, "cx-1")})
	return w.svc, qwen, cdx
}

// --wait to a Codex thread ends when the turn on the message ends: the
// courier hears it (turn/completed, told as the thread's reply), which is
// not printed as a reply.
func TestSendWaitCodexEndsWithTheTurn(t *testing.T) {
	svc, _, cdx := waitWorld(t)
	feed(t, cdx, domain.NewInbound(codexThread, codexThread, "done", time.Now()))
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "cx-1", Text: "run it", ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, domain.WaitIdle, res.WaitEnd)
	assert.Equal(t, domain.StatusIdle, res.WaitStatus)
	assert.Nil(t, res.Reply)
	assert.Equal(t, int32(1), cdx.get(0).sends.Load())
	assert.True(t, cdx.get(0).closed.Load())
	sent, err := app.Sent(res, nil, false)
	require.NoError(t, err)
	require.NotNil(t, sent.Receipt.Wait)
	assert.Equal(t, "idle", sent.Receipt.Wait.End)
	assert.Equal(t, wire.ExitOK, sent.Code)
}

// A turn that has not ended in time is wait_timeout (exit 11), as a
// registry-status wait's.
func TestSendWaitCodexTimesOut(t *testing.T) {
	svc, _, cdx := waitWorld(t)
	res, err := svc.Send(context.Background(), app.SendRequest{Address: "cx-1", Text: "run it", ConfirmOptions: app.ConfirmOptions{Wait: 200 * time.Millisecond}})
	require.NoError(t, err)
	assert.Equal(t, domain.WaitTimeout, res.WaitEnd)
	assert.Equal(t, int32(1), cdx.get(0).sends.Load())
	sent, err := app.Sent(res, nil, false)
	require.NoError(t, err)
	assert.Equal(t, wire.ExitCode(domain.ReasonWaitTimeout), sent.Code)
}

// --wait to a Qwen Code session, whose turn's end peerctl cannot see, is
// refused before anything is sent (a dry run too): no silent "not waited".
func TestSendWaitQwenCodeRefusedBeforeSending(t *testing.T) {
	svc, qwen, _ := waitWorld(t)
	for _, dry := range []bool{false, true} {
		_, err := svc.Send(context.Background(), app.SendRequest{Address: "qw-3b", Text: "run it", DryRun: dry, ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}})
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
		assert.Contains(t, r.Detail, "nothing was sent")
		assert.Contains(t, r.Detail, "Qwen Code publishes no status")
	}
	assert.Equal(t, 0, qwen.count(), "nothing was started or sent")
}

// --await-reply to a Qwen Code session says, with its receipt, that the
// session's model cannot reply (a program can): the wait goes on.
func TestSendAwaitReplyQwenCodeSaysItsModelCannotReply(t *testing.T) {
	svc, qwen, _ := waitWorld(t)
	var told []string
	ctx := app.WithSendTrace(context.Background(), &app.SendTrace{Handed: func(sent wire.Sent, _ app.Awaiting) { told = sent.Notes }})
	res, err := svc.Send(ctx, app.SendRequest{Address: "qw-3b", Text: "question", AwaitReply: 200 * time.Millisecond})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNoReply, r.Reason)
	assert.Equal(t, 1, qwen.count())
	note := "peerctl: note: a Qwen Code session's model cannot reply to peerctl"
	assert.True(t, hasPrefix(told, note), "told at the hand-over: %q", told)
	sent, err := app.Sent(res, err, true)
	require.NoError(t, err)
	assert.True(t, hasPrefix(sent.Notes, note), "%q", sent.Notes)
}

func hasPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// --wait to a Codex thread through peerctl serve, whose Router has the
// default transport made warm (Warm.Wrap), is waited on as without the
// service: the warm default still starts couriers; it is not refused as if
// another transport had been chosen.
func TestSendWaitCodexThroughAWarmDefault(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctrl := gomock.NewController(t)
	w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl)}
	cdx := &fakeCouriers{}
	warm := app.NewWarm(ctx)
	defer warm.Close()
	tr := warm.Wrap(&app.Router{By: map[domain.Harness][]ports.Transport{codex.Kind: {&warmCourierTransport{}}}})
	w.svc = app.New(w.reg, w.live, tr, "/cfg", app.WithCouriers(app.HarnessCouriers{codex.Kind: cdx}), app.WithHarnesses(plugins(t)))
	w.registry([]domain.Record{codexRecord(7200, "cx-1")})
	feed(t, cdx, domain.NewInbound(codexThread, codexThread, "done", time.Now()))
	res, err := w.svc.Send(ctx, app.SendRequest{Address: "cx-1", Text: "run it", ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, domain.WaitIdle, res.WaitEnd)
	assert.Equal(t, int32(1), cdx.get(0).sends.Load())
}

// plainTransport hands a message over and hears nothing after (Codex's
// queue).
type plainTransport struct{ name string }

func (p plainTransport) Name() string { return p.name }
func (p plainTransport) Deliver(context.Context, domain.Session, domain.Message) (domain.Receipt, error) {
	return domain.Receipt{Transport: p.name, Outcome: "queued"}, nil
}
func (p plainTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: p.name}, nil
}

// A wait refused for the transport picked names the harness's default as
// the one that hears the turn's end only when another was picked and the
// default does hear it.
func TestSendWaitCodexRefusalNamesTheDefaultOnlyWhenItWouldWait(t *testing.T) {
	queue := plainTransport{name: "queue"}
	for _, tc := range []struct {
		name   string
		router *app.Router
		hint   bool
	}{
		{"queue chosen", &app.Router{Chosen: "queue", By: map[domain.Harness][]ports.Transport{codex.Kind: {&warmCourierTransport{}, queue}}}, true},
		{"queue the default", &app.Router{By: map[domain.Harness][]ports.Transport{codex.Kind: {queue}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			w := world{reg: portsmock.NewMockRegistry(ctrl), live: portsmock.NewMockLiveness(ctrl)}
			cdx := &fakeCouriers{}
			w.svc = app.New(w.reg, w.live, tc.router, "/cfg", app.WithCouriers(app.HarnessCouriers{codex.Kind: cdx}), app.WithHarnesses(plugins(t)))
			w.registry([]domain.Record{codexRecord(7200, "cx-1")})
			_, err := w.svc.Send(context.Background(), app.SendRequest{Address: "cx-1", Text: "run it", ConfirmOptions: app.ConfirmOptions{Wait: time.Minute}})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
			assert.Contains(t, r.Detail, "the queue transport hears nothing")
			if tc.hint {
				assert.Contains(t, r.Detail, "default transport, courier, hears it")
			} else {
				assert.NotContains(t, r.Detail, "default transport")
			}
			assert.Equal(t, 0, cdx.count(), "nothing was started or sent")
		})
	}
}
