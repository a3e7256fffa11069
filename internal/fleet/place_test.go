package fleet

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// quietNode is a machine with no session and no registry change.
type quietNode struct{ app.Node }

func (quietNode) List(context.Context, wire.ListQuery) (wire.Listing, error) {
	return wire.Listing{}, nil
}

func (quietNode) Watch(ctx context.Context, _ func(wire.Event) bool, _ func(string)) error {
	<-ctx.Done()
	return nil
}

// join joins node on url as a service of stateDir in place (its boot and
// folder), until the test ends.
func join(t *testing.T, url, node, stateDir, place string) error {
	t.Helper()
	placeOf = func(string) string { return place }
	t.Cleanup(func() { placeOf = func(d string) string { return bootID() + "\x00" + folderID(d) } })
	life, cancel := context.WithCancel(context.Background())
	wait, _, err := Bus{}.Join(life, wiring.Presence{Settings: wiring.BusSettings{URLs: url}, Node: node, StateDir: stateDir, Version: "v0.test",
		Local: quietNode{}, Logf: t.Logf})
	if err != nil {
		cancel()
		return err
	}
	t.Cleanup(func() { cancel(); wait() })
	return nil
}

// Two services of one host name and one state folder path in two places
// (cloned machines: two boot ids; a folder bind-mounted over the path in
// another mount namespace: two inodes) are two owners: the second is
// refused the name the first holds, so no request reaches both.
func TestJoinRefusesATwinInAnotherPlace(t *testing.T) {
	url := natstest.Start(t)
	dir := t.TempDir()
	require.NoError(t, join(t, url, "ubuntu", dir, "boot-1\x00dev:1"))
	err := join(t, url, "ubuntu", dir, "boot-2\x00dev:1")
	require.ErrorIs(t, err, natsbus.ErrNodeTaken, "a clone (another boot) is refused")
	err = join(t, url, "ubuntu", dir, "boot-1\x00dev:2")
	require.ErrorIs(t, err, natsbus.ErrNodeTaken, "a bind-mounted twin (another inode) is refused")
}

// A service started again in the same place within one boot (after a
// crash: its key still live) takes its name back at once.
func TestJoinTakesThePlacesNameBack(t *testing.T) {
	url := natstest.Start(t)
	dir := t.TempDir()
	require.NoError(t, join(t, url, "alpha", dir, "boot-1\x00dev:1"))
	assert.NoError(t, join(t, url, "alpha", dir, "boot-1\x00dev:1"))
}
