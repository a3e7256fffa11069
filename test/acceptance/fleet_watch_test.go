//go:build unix

package acceptance

// watch --fleet on the built binary, hermetic (an embedded NATS server,
// test/natstest): every node's presence followed from one watch of the
// bucket, with --host merged; a node that leaves; usage errors.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/testproc"
)

func TestWatchFleetFollowsEveryNode(t *testing.T) {
	peerctlWithMCP(t) // watch --fleet runs in peerctl-mcp, the bus client's program
	url := natstest.Start(t)
	joinL, leave := busNodes(t, url)
	join := func(node string, s ...wire.Session) { joinL(node, wire.Listing{Sessions: s}) }
	ses := func(pid int, name string) wire.Session {
		sock := "/run/cc/" + string(rune('0'+pid)) + ".sock"
		return wire.Session{Harness: "claude-code", SessionID: "0000000" + string(rune('0'+pid)) + "-1111-2222-3333-444455556666", PID: pid, Name: name,
			Status: "idle", Verdict: "live", SocketPath: sock, Addressable: true, Endpoint: "cc-peer:v1:" + string(rune('0'+pid)) + ":" + strings.ReplaceAll(name, "\x1b", "%1B") + ":" + sock}
	}
	join("alpha", ses(1, "proj"))
	join("beta", ses(2, "api\x1b[2J"))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(t)}

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"watch", "--fleet"}, "--fleet: no bus: give --nats"},
		{[]string{"watch", "--nats", url}, "give --fleet or --host nats:NODE too"},
		{[]string{"watch", "--fleet", "--nats", "http://127.0.0.1:1"}, `scheme "http"`},
	} {
		r := runPeerctl(t, runOpts{Env: env}, tc.args...)
		assert.Equal(t, wire.ExitUsage, r.Code, "%q: %s", tc.args, r.Stderr)
		assert.Contains(t, string(r.Stderr), tc.says, "%q", tc.args)
	}

	start := func(args ...string) (*testproc.Buffer, *testproc.Buffer, *exec.Cmd) {
		w := exec.Command(peerctlBin(t), append([]string{"watch", "--fleet", "--nats", url}, args...)...)
		w.Env = env
		out, errs := &testproc.Buffer{}, &testproc.Buffer{}
		w.Stdout, w.Stderr = out, errs
		w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, w.Start())
		t.Cleanup(func() { _ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL); _ = w.Wait() })
		return out, errs, w
	}
	out, errs, _ := start("--json", "--host", ".")
	text, textErrs, _ := start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("watch --json: %s\nstderr: %s\nwatch: %s\nstderr: %s", out, errs, text, textErrs)
		}
	})
	eventually(t, time.Minute, "watch --fleet to print both nodes' sessions", func() bool {
		return strings.Contains(out.String(), `"host":"nats:alpha"`) && strings.Contains(out.String(), `"host":"nats:beta"`) &&
			strings.Contains(text.String(), "nats:beta")
	})
	assert.Contains(t, out.String(), `"endpoint":"nats:v1:alpha:cc-peer:v1:1:proj:/run/cc/1.sock"`)
	assert.Contains(t, out.String(), `"initial":true`)

	join("gamma", ses(3, "web"))
	leave("beta")
	eventually(t, time.Minute, "watch --fleet to print gamma joining and beta leaving", func() bool {
		return strings.Contains(out.String(), `"event":"left","host":"nats:beta"`) && strings.Contains(text.String(), "left")
	})
	assert.Contains(t, out.String(), `"event":"appeared","host":"nats:gamma"`)
	assert.Contains(t, out.String(), `"event":"gone","host":"nats:beta"`)
	assert.Contains(t, text.String(), "host nats:beta: node beta left the fleet's bus")
	catNoControl(t, []byte(text.String()))
	assert.Contains(t, text.String(), `api\x1b[2J`)
	assert.NotContains(t, out.String(), `"event":"lost"`, "a node leaving does not end the watch; stderr: %s", errs)
}

// busNodes joins nodes to the bus at url as their services would
// (join: a node with its listing as its presence; leave: it leaves),
// their presences refreshed until the test ends (the binary may take
// longer than the TTL to start on a busy machine).
func busNodes(t *testing.T, url string) (join func(node string, l wire.Listing), leave func(node string)) {
	var mu sync.Mutex
	live := map[string]*natsbus.Presence{}
	listing := map[string]wire.Listing{}
	refresh := time.NewTicker(2 * time.Second)
	t.Cleanup(refresh.Stop)
	go func() {
		for range refresh.C {
			mu.Lock()
			for node, p := range live {
				_ = p.Publish(context.Background(), listing[node])
			}
			mu.Unlock()
		}
	}()
	join = func(node string, l wire.Listing) {
		bus, err := natsbus.Connect(natsbus.Settings{URLs: url}, false)
		require.NoError(t, err)
		t.Cleanup(bus.Close)
		p, err := bus.Join(t.Context(), natsbus.Member{Node: node, Owner: node})
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		live[node], listing[node] = p, l
		require.NoError(t, p.Publish(t.Context(), l))
	}
	leave = func(node string) {
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, live[node].Leave(t.Context()))
		delete(live, node)
	}
	return join, leave
}
