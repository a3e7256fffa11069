//go:build unix

package acceptance

// list --fleet and serve --nats, hermetic: usage errors, a bus that does
// not answer, and a node's presence holding terminal escapes, printed
// escaped (an embedded NATS server, test/natstest).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

func TestFleetUsageErrorsAndAnUnansweringBus(t *testing.T) {
	peerctlWithMCP(t) // the bus client is linked into peerctl-mcp, which peerctl runs for these
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(t)}
	garbage := filepath.Join(t.TempDir(), "garbage.creds")
	require.NoError(t, os.WriteFile(garbage, []byte("not a seed\n"), 0o600))
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"list", "--fleet"}, wire.ExitUsage, "--fleet: no bus: give --nats"},
		{[]string{"list", "--nats", "nats://127.0.0.1:1"}, wire.ExitUsage, "give --fleet or --host nats:NODE too"},
		{[]string{"list", "--fleet", "--all", "--nats", "nats://127.0.0.1:1"}, wire.ExitUsage, "drop --all"},
		{[]string{"list", "--fleet", "--nats", "http://127.0.0.1:1"}, wire.ExitUsage, `scheme "http"`},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:1"}, wire.ExitHostUnreachable, "host_unreachable: the fleet's bus: no NATS server answered at nats://127.0.0.1:1"},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--node", "a b"}, wire.ExitUsage, `--node: bad node name: "a b"`},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--node", ""}, wire.ExitUsage, "--node: bad node name: empty"},
		{[]string{"list", "--fleet", "--nats", "nats://"}, wire.ExitUsage, "no host"},
		{[]string{"list", "--fleet", "--nats", "nats://:"}, wire.ExitUsage, "no host"},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:99999"}, wire.ExitUsage, "not 1 to 65535"},
		{[]string{"list", "--fleet", "--nats", "nats://[::1"}, wire.ExitUsage, "not a URL"},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1\x1b:1"}, wire.ExitUsage, "not a URL"},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:1", "--nats-creds", "/nonexistent.creds"}, wire.ExitUsage, "NATS credentials: open /nonexistent.creds"},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:1", "--nats-creds", "/"}, wire.ExitUsage, "NATS credentials"},
		{[]string{"list", "--fleet", "--nats", "nats://127.0.0.1:1", "--nats-creds", garbage}, wire.ExitUsage, "neither a .creds file"},
	} {
		r := runPeerctl(t, runOpts{Env: env}, tc.args...)
		assert.Equal(t, tc.code, r.Code, "%q: %s", tc.args, r.Stderr)
		assert.Contains(t, string(r.Stderr), tc.says, "%q", tc.args)
	}
	r := runPeerctl(t, runOpts{Env: append(env, "PEERCTL_NODE=")}, "list", "--host", "nats:a", "--nats", "nats://127.0.0.1:1")
	assert.Equal(t, wire.ExitUsage, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "$PEERCTL_NODE: empty")
	r = runPeerctl(t, runOpts{Env: env}, "list", "--fleet", "--nats", "nats://user:hunter2@127.0.0.1:1")
	assert.Equal(t, wire.ExitHostUnreachable, r.Code, "%s", r.Stderr)
	assert.NotContains(t, string(r.Stderr), "hunter2")
}

func TestFleetListPrintsAHostileNodeEscaped(t *testing.T) {
	peerctlWithMCP(t)
	url := natstest.Start(t)
	bus, err := natsbus.Connect(natsbus.Settings{URLs: url}, false)
	require.NoError(t, err)
	defer bus.Close()
	p, err := bus.Join(t.Context(), natsbus.Member{Node: "evil", Owner: "o"})
	require.NoError(t, err)
	name := "x\x1b]0;owned\x07\x1b[2J"
	sock := "/run/cc/7.sock"
	require.NoError(t, p.Publish(t.Context(), wire.Listing{Notes: []string{"note: \x1b[31mred\u202e"}, Sessions: []wire.Session{{Harness: "claude-code",
		SessionID: "00000007-1111-2222-3333-444455556666", PID: 7, Name: name, Cwd: "/tmp/\x9b6n", Status: "idle", Verdict: "live",
		SocketPath: sock, Addressable: true, Endpoint: "cc-peer:v1:7:x%1B]0;owned%07%1B[2J:" + sock}}}))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_NATS=" + url}

	r := runPeerctl(t, runOpts{Env: env}, "list", "--fleet")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	catNoControl(t, r.Stdout)
	catNoControl(t, r.Stderr)
	assert.Contains(t, string(r.Stdout), `nats:evil  x\x1b]0;owned\a\x1b[2J`)
	assert.Contains(t, string(r.Stderr), `peerctl: node evil: note: \x1b[31mred\u202e`)

	r = runPeerctl(t, runOpts{Env: env}, "list", "--fleet", "--json")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	var got []wire.Session
	require.NoError(t, json.Unmarshal(r.Stdout, &got))
	require.Len(t, got, 1)
	assert.Equal(t, name, got[0].Name, "JSON carries the text as it is, as a JSON string")
	assert.True(t, strings.HasPrefix(got[0].Endpoint, "nats:v1:evil:cc-peer:v1:7:"), got[0].Endpoint)
}

// policy nats-config prints the servers' authorization block for the nodes
// named, making each node's seed (0600) once; a bad use is a usage error.
func TestFleetConfigPrintsEachNodesCredentials(t *testing.T) {
	peerctlWithMCP(t) // the nkeys are the bus client's: policy nats-config runs in peerctl-mcp
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	keys := filepath.Join(t.TempDir(), "keys")
	r := runPeerctl(t, runOpts{Env: env}, "policy", "nats-config", "--keys", keys, "alpha", "beta.lan")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "authorization {")
	assert.Contains(t, string(r.Stdout), `subscribe: { allow: ["peerctl.v1.req.beta~lan.*", "_INBOX.peerctl.beta~lan.>"] }`)
	assert.Contains(t, string(r.Stderr), "made node alpha's key")
	assert.Contains(t, string(r.Stderr), "made the operator's key")
	fi, err := os.Stat(filepath.Join(keys, "alpha.nk"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again := runPeerctl(t, runOpts{Env: env}, "policy", "nats-config", "--keys", keys, "alpha", "beta.lan")
	require.Equal(t, 0, again.Code, "%s", again.Stderr)
	assert.Equal(t, string(r.Stdout), string(again.Stdout), "the keys are kept")
	assert.Empty(t, again.Stderr)
	for _, args := range [][]string{{"policy", "nats-config", "alpha"}, {"policy", "nats-config", "--keys", keys}, {"policy", "nats-config", "--keys", keys, "a b"}} {
		r := runPeerctl(t, runOpts{Env: env}, args...)
		assert.Equal(t, wire.ExitUsage, r.Code, "%q: %s", args, r.Stderr)
	}
}

// The operator's step on the built binary: policy nats-setup with the
// operator's key makes the mail stream and the presence bucket, and run
// again finds them; a node's key may not make them (exit 1, saying whose
// key does), and a service under a node's key, before the step, says what
// the operator runs.
func TestFleetSetupIsTheOperatorsStep(t *testing.T) {
	peerctlWithMCP(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	keys := filepath.Join(t.TempDir(), "keys")
	r := runPeerctl(t, runOpts{Env: env}, "policy", "nats-config", "--keys", keys, "alpha")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	conf := filepath.Join(t.TempDir(), "fleet.conf")
	require.NoError(t, os.WriteFile(conf, append([]byte("jetstream {}\n"), r.Stdout...), 0o600))
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	url := natstest.StartWith(t, opts)

	node := runPeerctl(t, runOpts{Env: env}, "policy", "nats-setup", "--nats", url, "--nats-creds", filepath.Join(keys, "alpha.nk"))
	assert.Equal(t, wire.ExitError, node.Code, "%s", node.Stderr)
	assert.Contains(t, string(node.Stderr), "is this the operator's key")

	w := newServeWorld(t)
	w.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "PEERCTL_NATS_CREDS=" + filepath.Join(keys, "alpha.nk"), "XDG_CONFIG_HOME=" + t.TempDir()}
	log := w.startServeWith(t)
	eventually(t, 2*time.Minute, "the service to say what the operator runs", func() bool {
		return strings.Contains(log.String(), "peerctl policy nats-setup --nats URL --nats-creds KEYS/_admin.nk")
	})

	admin := filepath.Join(keys, "_admin.nk")
	for _, want := range []string{`{"made":["stream peerctl_mail","bucket peerctl_presence"],"found":[]}`, `{"made":[],"found":["stream peerctl_mail","bucket peerctl_presence"]}`} {
		r := runPeerctl(t, runOpts{Env: env}, "policy", "nats-setup", "--nats", url, "--nats-creds", admin, "--json")
		require.Equal(t, 0, r.Code, "%s", r.Stderr)
		assert.JSONEq(t, want, string(r.Stdout))
	}
	eventually(t, 2*time.Minute, "the service to join once set up", func() bool {
		return strings.Contains(log.String(), "node alpha on the bus")
	})
}
