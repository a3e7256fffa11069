package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/outboxstore"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// recordingBus is a bus client that records the settings each node of the
// bus is reached with.
type recordingBus struct {
	wiring.Bus
	reached []wiring.BusSettings
}

func (*recordingBus) Check(wiring.BusSettings) error { return nil }

func (b *recordingBus) Node(s wiring.BusSettings, dest domain.Dest, _ time.Duration) (app.Node, error) {
	b.reached = append(b.reached, s)
	return app.LocalNode{}, nil
}

// A service given its bus by flags (serve --nats URL --nats-creds FILE
// --node NAME, no $PEERCTL_NATS) reaches other nodes (its dashboard's
// nats: hosts) on that bus, as that node.
func TestServeReachesNodesOnItsOwnBus(t *testing.T) {
	env := map[string]string{nodeEnv: "from-env"}
	f := newFactory(nil, nil, nil, func(k string) string { return env[k] })
	bus := &recordingBus{}
	f.bus = bus
	var flags busFlags
	cmd := &cobra.Command{Use: "serve"}
	addBusFlags(cmd, &flags, true)
	require.NoError(t, cmd.ParseFlags([]string{"--nats", "nats://bus-1:4222", "--nats-creds", "/etc/beta.creds", "--node", "beta"}))
	join, _, err := f.joinBus(cmd, flags, t.TempDir())
	require.NoError(t, err)
	require.NotNil(t, join)

	alpha, err := domain.NodeDest("alpha")
	require.NoError(t, err)
	_, err = f.nodes([]domain.Dest{alpha})
	require.NoError(t, err)
	require.Len(t, bus.reached, 1)
	got := bus.reached[0]
	assert.Equal(t, "nats://bus-1:4222", got.URLs)
	assert.Equal(t, "/etc/beta.creds", got.Creds)
	assert.Equal(t, "beta", got.Node, "as the service's node, not $PEERCTL_NODE's")
}

// An empty --node, or $PEERCTL_NODE set empty, is a usage error, not the
// host name; unset, it is the host name.
func TestAnEmptyNodeNameIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		environ []string
		says    string
	}{
		{[]string{"--node", ""}, nil, "--node: empty"},
		{nil, []string{nodeEnv + "="}, "$" + nodeEnv + ": empty"},
	} {
		env := map[string]string{}
		f := newFactory(nil, nil, nil, func(k string) string { return env[k] })
		f.environ = func() []string { return tc.environ }
		var flags busFlags
		cmd := &cobra.Command{Use: "serve"}
		addBusFlags(cmd, &flags, true)
		require.NoError(t, cmd.ParseFlags(tc.args))
		_, err := f.nodeName(cmd, flags)
		var usage usageError
		require.ErrorAs(t, err, &usage, "%q", tc.args)
		assert.Contains(t, err.Error(), tc.says)
		_, err = f.nodeName(nil, busFlags{})
		if tc.environ != nil {
			assert.ErrorContains(t, err, tc.says, "--host nats:NODE's sender too")
		}
	}
	f := newFactory(nil, nil, nil, func(string) string { return "" })
	f.environ = func() []string { return nil }
	host, err := os.Hostname()
	require.NoError(t, err)
	got, err := f.nodeName(nil, busFlags{})
	if _, perr := domain.ParseNode(host); perr == nil {
		require.NoError(t, err)
		assert.Equal(t, host, got)
	}
}

// listingBus records the settings list --fleet reads the bus with.
type listingBus struct {
	recordingBus
	read []wiring.BusSettings
}

func (b *listingBus) Listing(_ context.Context, s wiring.BusSettings, _ []domain.Harness) app.NodeListing {
	b.read = append(b.read, s)
	return app.NodeListing{}
}

// list --fleet's whole read is bounded by $PEERCTL_HOST_TIMEOUT, as a
// call over ssh is.
func TestListFleetIsBoundedByTheHostTimeout(t *testing.T) {
	env := map[string]string{hostTimeoutEnv: "7s", "HOME": t.TempDir()}
	bus := &listingBus{}
	var out, errOut strings.Builder
	code := run([]string{"list", "--fleet", "--json", "--nats", "nats://bus-1:4222"}, strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }, nil, bus, nil, nil)
	require.Equal(t, 0, code, errOut.String())
	require.Len(t, bus.read, 1)
	assert.Equal(t, 7*time.Second, bus.read[0].Timeout)
}

func (b *listingBus) Watch(_ context.Context, s wiring.BusSettings, _ func(wire.Event) bool, _ func(string)) error {
	b.read = append(b.read, s)
	return nil
}

// list --fleet and watch --fleet read the bus as this machine's node
// ($PEERCTL_NODE): per-node credentials allow the replies' inbox of that
// node only (_INBOX.peerctl.NODE), so a read as no node is refused.
func TestFleetReadsAreThisNodes(t *testing.T) {
	env := map[string]string{nodeEnv: "bravo", "HOME": t.TempDir(), "PEERCTL_SERVE": "off"}
	for _, args := range [][]string{{"list", "--fleet", "--json"}, {"watch", "--fleet", "--json"}} {
		bus := &listingBus{}
		var out, errOut strings.Builder
		run(append(args, "--nats", "nats://bus-1:4222"), strings.NewReader(""), &out, &errOut, func(k string) string { return env[k] }, nil, bus, outboxstore.Store{}, nil)
		require.Len(t, bus.read, 1, "%v: %s", args, errOut.String())
		assert.Equal(t, "bravo", bus.read[0].Node, "%v", args)
	}
}

// keyBus records the nodes whose keys are made.
type keyBus struct {
	recordingBus
	made []string
}

func (b *keyBus) NodeKey(_, node string) (string, bool, error) {
	b.made = append(b.made, node)
	return "UPUBLIC", true, nil
}

// policy nats-config checks every name before it makes a key: a node
// named twice makes none.
func TestNATSConfigChecksEveryNameFirst(t *testing.T) {
	bus := &keyBus{}
	var out, errOut strings.Builder
	code := run([]string{"policy", "nats-config", "--keys", t.TempDir(), "a", "b", "a"}, strings.NewReader(""), &out, &errOut, func(string) string { return "" }, nil, bus, nil, nil)
	assert.Equal(t, wire.ExitUsage, code, errOut.String())
	assert.Contains(t, errOut.String(), "node a named twice")
	assert.Empty(t, bus.made, "no key made")
}
