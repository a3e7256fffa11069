//go:build unix

package acceptance

// A durable send across machines on the real three-server cluster
// (PEERCTL_LIVE=1; natscluster_test.go), offline, with each node's own
// credentials (policy nats-config's): mike sends durably to lima while
// lima's service is down; one NATS server is killed; lima's service,
// started, delivers it once into its real Claude Code session, and mike's
// outbox shows the far chain: stored, delivered with Claude Code's receipt,
// taken up and replied there (the session's model is the scripted
// stand-in, which answers). The server is started again after.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
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
		t.Skip("live fleet test: set PEERCTL_LIVE=1 to run it (a three-server NATS cluster and a real Claude Code session)")
	}
	peerctlWithMCP(t)
	urls := sharedNATSCluster(t)
	// lima's real session; its model is the stand-in that answers each
	// cross-session message with a SendMessage back to its sender.
	bin := livecc.Require(t, KnownNewestClaudeCode)
	model := scriptedmodel.Start(t, replyScript)
	s := livecc.Start(t, bin, livecc.Options{ModelURL: model.URL(), ModelKey: model.Key(), Settings: livecc.ReplySettings(), WaitSettled: true})
	require.NotEmpty(t, s.Name)
	lima := newServeWorld(t)
	lima.more = append(courierEnv(t, s.ConfigDir, bin), "XDG_STATE_HOME="+lima.state, "XDG_RUNTIME_DIR="+lima.run, "XDG_CONFIG_HOME="+t.TempDir(),
		"PEERCTL_NATS="+urls, "PEERCTL_NODE=lima", "PEERCTL_NATS_CREDS="+filepath.Join(natsKeys(), "lima.nk"))
	r := runPeerctl(t, runOpts{Env: lima.env(t)}, "policy", "add", "--from", "node:mike", "--to", "*", "allow")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	mike := newServeWorld(t)
	mike.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=mike", "PEERCTL_NATS_CREDS=" + filepath.Join(natsKeys(), "mike.nk"),
		"XDG_CONFIG_HOME=" + t.TempDir()}

	// lima's service is not running: the message waits on the bus.
	text := "the release is cut " + strconv.FormatInt(time.Now().UnixNano(), 36)
	r = mike.peerctl(t, nil, "send", "--json", "--durable", "--key", "live-1", "--host", "nats:lima", "--await-reply=3m", s.Name, text)
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
			t.Logf("lima's service's log:\n%s\nthe session's screen:\n%s", log, s.Screen())
		}
	})
	// The servers left elect new leaders for what the killed one led:
	// lima joins, takes its mail once they answer, and delivers it into
	// the real session, whose transcript holds it once.
	eventually(t, 5*time.Minute, "the message in lima's session's transcript", func() bool { return enqueuedCount(t, s.TranscriptPath(), text) > 0 })
	kept := lima.outbox(t)
	require.Len(t, kept, 1)
	assert.Equal(t, "nats:mike:live-1", kept[0].Key)

	// mike's outbox shows the far chain: delivered on lima with Claude
	// Code's own msg_id, then taken up and replied there.
	var shown outboxEntry
	eventually(t, 5*time.Minute, "mike's outbox to show the reply on lima", func() bool {
		shown = mike.show(t, got.Outbox.ID)
		return shown.State == "replied"
	})
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, shown.MsgID, "Claude Code's own msg_id, from lima")
	var chain []string
	far := fmt.Sprintf("on nats:lima (message %d there): ", kept[0].ID)
	for _, h := range shown.History {
		// A run of one state (a try there that found the session busy)
		// counts once.
		if strings.HasPrefix(h.Reason, far) && (len(chain) == 0 || chain[len(chain)-1] != h.State) {
			chain = append(chain, h.State)
		}
		if h.State == "delivered" {
			assert.Contains(t, h.Reason, "(msg_id "+shown.MsgID+")", "the harness's receipt, from lima")
		}
	}
	assert.Equal(t, []string{"stored", "delivered", "replied"}, chain, "the far chain in %+v", shown.History)
	assert.Contains(t, shown.History[len(shown.History)-1].Reason, "pong: "+text, "the reply's words")
	assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text), "never twice")
}
