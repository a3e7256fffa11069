//go:build unix

package acceptance

// A service on the fleet's bus, hermetic (an embedded NATS server,
// test/natstest): how it runs as a standing node of the fleet.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/natstest"
)

// A node's service does not idle out by default (other machines reach it,
// their durable sends wait for it); an explicit --idle-exit still holds.
func TestFleetServiceStaysOnTheBus(t *testing.T) {
	peerctlWithMCP(t) // serve with a bus runs in peerctl-mcp
	url := natstest.Start(t)
	for _, c := range []struct {
		args []string
		want int64
	}{{nil, 0}, {[]string{"--idle-exit", "5m"}, 300}} {
		w := newServeWorld(t)
		w.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta" + string(rune('0'+c.want/100))}
		w.startServeWith(t, c.args...)
		st, r := w.status(t)
		require.Equal(t, 0, r.Code, "%s", r.Stderr)
		assert.Equal(t, c.want, st.IdleExitSeconds, "serve %v", c.args)
		w.stopServe(t)
	}
}
