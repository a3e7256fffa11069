//go:build unix

package acceptance

// A durable send across machines on the real three-server cluster
// (PEERCTL_LIVE=1; natscluster_test.go), offline, with each node's own
// credentials (policy nats-config's): mike sends durably to lima while
// lima's service is down; one NATS server is killed; lima's service,
// started, delivers it once to its (fake) Claude Code session, and mike's
// outbox shows it delivered there. The server is started again after.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// killServer kills the cluster's server i (0, 1 or 2), once the cluster
// is healthy with streams (each with a leader and every replica current:
// what the server held lives on in the other two), and starts it again
// when the test ends, waiting for the cluster to be healthy again for the
// next test. A failed test logs the servers' logs.
func killServer(t *testing.T, i int, streams ...string) {
	t.Helper()
	waitHealthy(t, streams...)
	p := cluster.procs[i]
	require.NoError(t, syscall.Kill(-p.Process.Pid, syscall.SIGKILL))
	_ = p.Wait()
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range cluster.logs {
				t.Logf("NATS server n%d's log:\n%s", i+1, l.String())
			}
		}
		conf := filepath.Join(cluster.dir, fmt.Sprintf("n%d.conf", i+1))
		cmd := exec.Command(testbin.Build(t, natsServerPkg), "-c", conf)
		log := &testproc.Buffer{}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		cluster.procs[i], cluster.logs[i] = cmd, log
		waitHealthy(t, streams...)
	})
}

// replicas is how many servers keep stream name (made by a service
// meanwhile).
func replicas(t *testing.T, name string) int {
	t.Helper()
	nc, err := nats.Connect(cluster.urls)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var info *jetstream.StreamInfo
	eventually(t, 3*time.Minute, "stream "+name, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, name)
		if err == nil {
			info, err = s.Info(ctx)
		}
		return err == nil
	})
	return info.Config.Replicas
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

	// What a node needs from the bus is kept on the three servers, so one
	// of them may die.
	presence, mail := "KV_"+natsbus.PresenceBucket, natsbus.MailStream
	require.Equal(t, 3, replicas(t, presence), "the presence bucket's replicas")
	require.Equal(t, 3, replicas(t, mail), "the mail stream's replicas")
	killServer(t, 1, presence, mail)
	log := lima.startServeWith(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lima's service's log:\n%s", log)
		}
	})
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
