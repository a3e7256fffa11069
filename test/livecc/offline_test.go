//go:build unix

package livecc_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// TestLiveOffline proves what scripts/offline.sh promises the live tests:
// inside it (PEERCTL_OFFLINE=1) nothing but loopback is reachable, while
// loopback itself works; Go downloads nothing. Run on the open network, it
// runs itself again through the script and expects that run to pass, and
// expects CheckOffline to see the way out it is run beside. It sends
// nothing off the machine either way (CheckOffline only looks routes up).
func TestLiveOffline(t *testing.T) {
	if !livecc.Enabled() {
		t.Skip("live test: set PEERCTL_LIVE=1 to run it (needs unshare and ip, or root)")
	}
	if livecc.Offline() {
		require.NoError(t, livecc.CheckOffline())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err, "loopback works offline")
		ln.Close()
		assert.Equal(t, "off", os.Getenv("GOPROXY"), "go downloads nothing offline")
		return
	}
	if err := livecc.CheckOffline(); err == nil {
		t.Log("this machine has no network but loopback anyway")
	} else {
		t.Logf("on the open network: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "offline.sh"))
	require.NoError(t, err)
	cmd := exec.Command(script, os.Args[0], "-test.run=^TestLiveOffline$", "-test.v")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestLiveOffline")
	assert.NotContains(t, string(out), "on the open network")
}
