package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

func TestModuleValidates(t *testing.T) {
	for _, transport := range []string{"", courierexec.Name, socketframe.Name} {
		t.Run(transport, func(t *testing.T) {
			err := fx.ValidateApp(wiring.Module, fx.Supply(testConfig(t.TempDir(), transport)), fx.Invoke(func(*app.Service) {}))
			require.NoError(t, err)
		})
	}
}

func TestModuleRejectsUnknownTransport(t *testing.T) {
	var svc *app.Service
	a := fx.New(wiring.Module, fx.Supply(testConfig(t.TempDir(), "pigeon")), fx.Populate(&svc), fx.NopLogger)
	require.Error(t, a.Err())
	assert.Contains(t, a.Err().Error(), `unknown transport "pigeon"`)
}

// fakeTransport records what it was asked to deliver.
type fakeTransport struct {
	got []string
	to  []int
}

func (f *fakeTransport) Name() string { return "fake" }

func (f *fakeTransport) Deliver(_ context.Context, s domain.Session, m domain.Message) (domain.Receipt, error) {
	f.got, f.to = append(f.got, m.Text()), append(f.to, s.PID())
	return domain.Receipt{Transport: "fake", Outcome: "posted"}, nil
}

func (f *fakeTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: "fake"}, nil
}

// TestModuleWithReplacedTransport wires the real registry and liveness
// adapters over a temp config dir holding a record for this very process,
// swaps the transport with fx.Replace, and sends through the Service.
func TestModuleWithReplacedTransport(t *testing.T) {
	cfg := t.TempDir()
	sessions := filepath.Join(cfg, "sessions")
	require.NoError(t, os.Mkdir(sessions, 0o700))
	pid := os.Getpid()
	start, err := procliveness.StartTime("/proc", pid)
	require.NoError(t, err)
	rec := `{"pid":` + strconv.Itoa(pid) + `,"sessionId":"` + idA + `","procStart":"` + start +
		`","kind":"interactive","name":"fx-peer","messagingSocketPath":"/tmp/cc-socks/x.sock","cwd":"/w"}`
	require.NoError(t, os.WriteFile(filepath.Join(sessions, strconv.Itoa(pid)+".json"), []byte(rec), 0o600))

	fake := &fakeTransport{}
	var svc *app.Service
	a := fxtest.New(t,
		wiring.Module,
		fx.Supply(testConfig(cfg, socketframe.Name)),
		fx.Replace(fx.Annotate(fake, fx.As(new(ports.Transport)))),
		fx.Populate(&svc),
	)
	a.RequireStart()
	defer a.RequireStop()

	res, err := svc.Send(context.Background(), app.SendRequest{Address: "fx-peer", Text: "through fx"})
	require.NoError(t, err)
	assert.Equal(t, "fake", res.Receipt.Transport)
	assert.Equal(t, []string{"through fx"}, fake.got)
	assert.Equal(t, []int{pid}, fake.to)
}

// TestReadModuleBindsAsModule: the read-only graph (list, enrich,
// completion) binds the same registry and liveness adapters as Module, so
// the two can never list differently, and its Service has no transport.
func TestReadModuleBindsAsModule(t *testing.T) {
	cfg := testConfig(t.TempDir(), "")
	type bound struct {
		fx.In
		Registry ports.Registry
		Liveness ports.Liveness
		Service  *app.Service
	}
	var full, read bound
	require.NoError(t, fx.New(wiring.Module, fx.Supply(cfg), fx.Populate(&full), fx.NopLogger).Err())
	require.NoError(t, fx.New(wiring.ReadModule, fx.Supply(cfg), fx.Populate(&read), fx.NopLogger).Err())
	assert.IsType(t, full.Registry, read.Registry)
	assert.IsType(t, full.Liveness, read.Liveness)
	_, err := read.Service.Send(context.Background(), app.SendRequest{Address: "anyone", Text: "hi"})
	assert.ErrorIs(t, err, app.ErrNoTransport)
}
