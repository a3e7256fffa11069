//go:build unix

package acceptance

// The fleet on a real three-server NATS JetStream cluster on loopback
// (PEERCTL_LIVE=1; natscluster_test.go), offline: two "machines" (each a
// service with state and registry folders of its own, and a fake Claude
// Code session) join it; `list --fleet` shows both machines' sessions; a
// session that appears is pushed; a second service claiming a live node's
// name is refused; a node whose service is killed drops out within 30 s,
// one stopped leaves at once.

import (
	"encoding/json"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fleetEntry struct {
	Host     string `json:"host"`
	Name     string `json:"name"`
	Harness  string `json:"harness"`
	Endpoint string `json:"endpoint"`
}

// fleetMachine is a service joined to the bus as node, with a session
// named session in its registry.
func fleetMachine(t *testing.T, urls, node, session string) *serveWorld {
	peerctlWithMCP(t) // serve with a bus runs in peerctl-mcp, beside peerctl
	w := newServeWorld(t)
	w.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=" + node, "CLAUDE_CONFIG_DIR=" + w.config}
	w.addSession(t, session)
	w.startServe(t)
	return &w
}

// fleetList runs `list --fleet --harness claude-code --json` (this
// machine's other harnesses' sessions, seen by both services, are not the
// test's) and returns its entries by host.
func fleetList(t *testing.T, urls string) map[string][]string {
	t.Helper()
	peerctlWithMCP(t)
	r := runPeerctl(t, runOpts{Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_NATS=" + urls}},
		"list", "--fleet", "--harness", "claude-code", "--json")
	require.Equal(t, 0, r.Code, "list --fleet: %s", r.Stderr)
	var got []fleetEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
	out := map[string][]string{}
	for _, e := range got {
		out[e.Host] = append(out[e.Host], e.Name)
		assert.Regexp(t, `^nats:v1:`+e.Host[len("nats:"):]+`:cc-peer:v1:`, e.Endpoint)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

func TestLiveFleetListsEveryMachine(t *testing.T) {
	if os.Getenv("PEERCTL_LIVE") != "1" {
		t.Skip("live fleet test: set PEERCTL_LIVE=1 to run it (builds and runs a three-server NATS cluster)")
	}
	urls := sharedNATSCluster(t)
	a := fleetMachine(t, urls, "alpha", "proj-a")
	b := fleetMachine(t, urls, "beta", "proj-b")

	want := map[string][]string{"nats:alpha": {"inbox", "proj-a"}, "nats:beta": {"inbox", "proj-b"}}
	var got map[string][]string
	eventually(t, 60*time.Second, "both machines' sessions in list --fleet", func() bool {
		got = fleetList(t, urls)
		return assert.ObjectsAreEqual(want, got)
	})

	// A session that appears on alpha is pushed (the service watches its
	// registry), long before the next refresh would have.
	a.addSession(t, "proj-a2")
	eventually(t, 60*time.Second, "alpha's new session in list --fleet", func() bool {
		return slices.Contains(fleetList(t, urls)["nats:alpha"], "proj-a2")
	})

	// A second service claiming beta's name, from another state folder,
	// is refused and changes nothing.
	dup := newServeWorld(t)
	dup.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + dup.config}
	r := runPeerctl(t, runOpts{Env: dup.env(t), Timeout: 2 * time.Minute}, "serve", "--idle-exit=0")
	assert.Equal(t, 1, r.Code)
	assert.Contains(t, string(r.Stderr), "node beta is held by a live peerctl serve")
	assert.Equal(t, []string{"inbox", "proj-b"}, fleetList(t, urls)["nats:beta"])

	// beta's service killed (no goodbye): it drops out within 30 s, its
	// presence's TTL being 20 s.
	killed := time.Now()
	require.NoError(t, syscall.Kill(-b.srv.Process.Pid, syscall.SIGKILL))
	_ = b.srv.Wait()
	var gone time.Duration
	eventually(t, 2*time.Minute, "beta to drop out of list --fleet", func() bool {
		asked := time.Since(killed)
		_, there := fleetList(t, urls)["nats:beta"]
		gone = asked
		return !there
	})
	t.Logf("beta dropped out %s after its service was killed", gone.Round(time.Second))
	assert.LessOrEqual(t, gone, 30*time.Second, "a killed node drops out within 30 s")

	// alpha's service stopped (SIGTERM): it leaves the bus at once.
	a.stopServe(t)
	assert.NotContains(t, fleetList(t, urls), "nats:alpha", "a stopped service's node is gone when it has ended")
}
