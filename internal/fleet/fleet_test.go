package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/wiring"
)

// A service whose bus does not answer logs the servers without their
// password.
func TestJoinLogsTheServersWithoutTheirPassword(t *testing.T) {
	var mu sync.Mutex
	var log strings.Builder
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&log, format+"\n", args...)
	}
	life, cancel := context.WithCancel(t.Context())
	wait, _, err := Bus{}.Join(life, wiring.Presence{Settings: wiring.BusSettings{URLs: "nats://user:hunter2@127.0.0.1:1"}, Node: "n1", StateDir: t.TempDir(), Logf: logf})
	require.NoError(t, err)
	cancel()
	wait()
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, log.String(), "the fleet's bus nats://user:xxxxx@127.0.0.1:1")
	assert.NotContains(t, log.String(), "hunter2")
}
