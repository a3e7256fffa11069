//go:build unix

package acceptance

// A durable send across machines on the real three-server cluster
// (PEERCTL_LIVE=1; natscluster_test.go), offline, with each node's own
// credentials (policy nats-config's): mike sends durably to lima while
// lima's service is down; one NATS server is killed; lima's service,
// started, delivers it once to its (fake) Claude Code session, and mike's
// outbox shows it delivered there. The server is started again after.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// killServer kills the cluster's server i (0, 1 or 2) and starts it again,
// healthy, when the test ends.
func killServer(t *testing.T, i int) {
	t.Helper()
	p := cluster.procs[i]
	require.NoError(t, syscall.Kill(-p.Process.Pid, syscall.SIGKILL))
	_ = p.Wait()
	t.Cleanup(func() {
		conf := filepath.Join(cluster.dir, fmt.Sprintf("n%d.conf", i+1))
		b, err := os.ReadFile(conf)
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^http: (\S+)$`).FindSubmatch(b)
		require.NotNil(t, m)
		cmd := exec.Command(testbin.Build(t, natsServerPkg), "-c", conf)
		log := &testproc.Buffer{}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		cluster.procs[i], cluster.logs[i] = cmd, log
		client := &http.Client{Timeout: 5 * time.Second}
		eventually(t, 2*time.Minute, "the server started again to be healthy", func() bool {
			res, err := client.Get("http://" + string(m[1]) + "/healthz")
			if err != nil {
				return false
			}
			_ = res.Body.Close()
			return res.StatusCode == http.StatusOK
		})
	})
}

func TestLiveFleetDurableSendArrivesOnceWhileAServerIsDown(t *testing.T) {
	if os.Getenv("PEERCTL_LIVE") != "1" {
		t.Skip("live fleet test: set PEERCTL_LIVE=1 to run it (builds and runs a three-server NATS cluster)")
	}
	peerctlWithMCP(t)
	urls := sharedNATSCluster(t)
	lima := newServeWorld(t)
	lima.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=lima", "PEERCTL_NATS_CREDS=" + filepath.Join(natsKeys(), "lima.nk"),
		"CLAUDE_CONFIG_DIR=" + lima.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	r := runPeerctl(t, runOpts{Env: lima.env(t)}, "policy", "add", "--from", "node:mike", "--to", "*", "allow")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	mike := newServeWorld(t)
	mike.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=mike", "PEERCTL_NATS_CREDS=" + filepath.Join(natsKeys(), "mike.nk"),
		"XDG_CONFIG_HOME=" + t.TempDir()}

	r = mike.peerctl(t, nil, "send", "--json", "--durable", "--key", "live-1", "--host", "nats:lima", "inbox", "the release is cut")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	assert.Equal(t, "stored", got.Outcome)
	assert.Contains(t, got.Detail, "on the fleet's bus, in node lima's mail")

	killServer(t, 1)
	log := lima.startServeWith(t)
	// The servers left elect new leaders for what the killed one led:
	// lima joins, and takes its mail, once they answer.
	eventually(t, 3*time.Minute, "lima's service to deliver the message", func() bool { return len(lima.listener.Frames()) > 0 })
	frames := lima.listener.Frames()
	require.Len(t, frames, 1, "lima's log: %s", log)
	assert.Contains(t, string(frames[0]), "the release is cut")
	eventually(t, 3*time.Minute, "mike's outbox to show it delivered on lima", func() bool {
		return mike.show(t, got.Outbox.ID).State == "delivered"
	})
	kept := lima.outbox(t)
	require.Len(t, kept, 1)
	assert.Equal(t, "nats:mike:live-1", kept[0].Key)
	assert.Len(t, lima.listener.Frames(), 1, "never twice")
}
