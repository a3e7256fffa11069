package app_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// countingRegistry counts reads.
type countingRegistry struct {
	ports.Registry
	reads atomic.Int32
}

func (c *countingRegistry) Read(ctx context.Context) (ports.Snapshot, error) {
	c.reads.Add(1)
	return c.Registry.Read(ctx)
}

func TestEnrich(t *testing.T) {
	cfg := t.TempDir()
	live := startFake(t, cfg, idA, "proj-89")
	live.setStatus("busy")
	stale := startFake(t, cfg, idB, "api-3c")
	stale.crash()
	const unknown = "0badc0de-0000-4000-8000-000000000000"

	reg := &countingRegistry{Registry: fsregistry.New(fsregistry.SessionsDir(cfg))}
	svc := app.New(reg, procliveness.New(), nil, cfg)
	got, err := svc.Enrich(context.Background(), []string{idA, idB, unknown, idA})
	require.NoError(t, err)
	assert.Equal(t, int32(1), reg.reads.Load(), "one registry read for the whole batch")
	assert.Equal(t, map[string]wire.LiveInfo{
		idA: {Endpoint: "cc-peer:v1:" + strconv.Itoa(live.PID()) + ":proj-89:" + live.rec["messagingSocketPath"].(string), Status: "busy"},
	}, got, "only the live id is enriched; stale and unknown ids are absent")
}

func TestEnrichNothingAskedReadsNothing(t *testing.T) {
	reg := &countingRegistry{Registry: fsregistry.New(t.TempDir())}
	svc := app.New(reg, procliveness.New(), nil, "")
	got, err := svc.Enrich(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Zero(t, reg.reads.Load())
}

// TestEnrichSameIDTwice: a resumed session running in two processes; the
// addressable record wins over the one without a socket.
func TestEnrichSameIDTwice(t *testing.T) {
	cfg := t.TempDir()
	a := startFake(t, cfg, idA, "proj-89")
	b := startFake(t, cfg, idA, "proj-89-resumed")
	b.mu.Lock()
	delete(b.rec, "messagingSocketPath")
	b.write()
	b.mu.Unlock()
	svc := app.New(fsregistry.New(fsregistry.SessionsDir(cfg)), procliveness.New(), nil, cfg)
	got, err := svc.Enrich(context.Background(), []string{idA})
	require.NoError(t, err)
	require.Contains(t, got, idA)
	assert.Contains(t, got[idA].Endpoint, ":"+strconv.Itoa(a.PID())+":proj-89:")
}

type failingRegistry struct{}

func (failingRegistry) Read(context.Context) (ports.Snapshot, error) {
	return ports.Snapshot{}, errors.New("read registry /x: permission denied")
}

func TestEnrichRegistryError(t *testing.T) {
	svc := app.New(failingRegistry{}, procliveness.New(), nil, "")
	_, err := svc.Enrich(context.Background(), []string{idA})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permission denied")
}
