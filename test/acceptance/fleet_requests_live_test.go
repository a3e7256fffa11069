//go:build unix

package acceptance

// Requests over the real three-server cluster (PEERCTL_LIVE=1, offline;
// natscluster_test.go, shared with the other live fleet tests), each node
// with its own credentials (policy nats-config's): machine lima's service (its
// own state folder; its registry a real Claude Code session's) answers
// machine mike's `show` and `send --host nats:lima`, the receipt Claude
// Code's own; mike's credentials are refused on lima's requests and
// replies, and on a request made as lima.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/livecc"
)

func TestLiveFleetRequestsReachARealSession(t *testing.T) {
	if os.Getenv("PEERCTL_LIVE") != "1" {
		t.Skip("live fleet test: set PEERCTL_LIVE=1 to run it (a three-server NATS cluster and a real Claude Code session)")
	}
	peerctlWithMCP(t) // serve with a bus and --host nats:NODE run in peerctl-mcp
	urls := sharedNATSCluster(t)
	bin := livecc.Require(t, liveVersion)
	s := livecc.Start(t, bin, livecc.Options{WaitSettled: true})
	require.NotEmpty(t, s.Name)

	lima := newServeWorld(t)
	limaConfig := t.TempDir()
	lima.more = append(courierEnv(t, s.ConfigDir, bin), "XDG_STATE_HOME="+lima.state, "XDG_RUNTIME_DIR="+lima.run, "XDG_CONFIG_HOME="+limaConfig,
		"PEERCTL_NATS="+urls, "PEERCTL_NODE=lima", "PEERCTL_NATS_CREDS="+filepath.Join(natsKeys(), "lima.nk"))
	r := runPeerctl(t, runOpts{Env: lima.env(t)}, "policy", "add", "--from", "node:mike", "--to", "*", "allow")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	lima.startServe(t)

	mike := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_NATS=" + urls, "PEERCTL_NODE=mike",
		"PEERCTL_NATS_CREDS=" + filepath.Join(natsKeys(), "mike.nk"), "PEERCTL_SERVE=off", "XDG_CONFIG_HOME=" + t.TempDir()}
	run := func(args ...string) result {
		return runPeerctl(t, runOpts{Env: mike, Timeout: 3 * time.Minute}, args...)
	}

	var shown wire.Show
	eventually(t, 2*time.Minute, "lima's service to answer show --host nats:lima", func() bool {
		r := run("show", "--host", "nats:lima", "--json", s.Name)
		return r.Code == 0 && json.Unmarshal(r.Stdout, &shown) == nil
	})
	assert.Equal(t, s.Name, shown.Name)
	assert.Equal(t, "nats:lima", shown.Host)
	assert.True(t, strings.HasPrefix(shown.Endpoint, "nats:v1:lima:cc-peer:v1:"), shown.Endpoint)

	text := "peerctl live fleet request " + time.Now().Format(time.RFC3339Nano)
	r = run("send", "--host", "nats:lima", "--json", "--confirm-timeout", "30s", "--from", "live-fleet", s.Name, text)
	require.Equal(t, 0, r.Code, "stderr: %s\nscreen:\n%s", r.Stderr, s.Screen())
	var got courierReceipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	assert.Equal(t, "delivered", got.Outcome, "note %s", got.ConfirmNote)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, got.MsgID, "Claude Code's own msg_id")
	assert.Contains(t, string(r.Stdout), `"host": "nats:lima"`)
	assert.True(t, enqueued(t, s.TranscriptPath(), "live-fleet", text), "the transcript holds the exact text")

	// mike's credentials on lima's requests, lima's replies, and a
	// request made as lima: the servers refuse each.
	var mu sync.Mutex
	var refused []string
	nc, err := nats.Connect(urls, nkeyOption(t, filepath.Join(natsKeys(), "mike.nk")),
		nats.CustomInboxPrefix(natsbus.InboxPrefix("mike")), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			refused = append(refused, err.Error())
			mu.Unlock()
		}))
	require.NoError(t, err)
	defer nc.Close()
	for _, subj := range []string{natsbus.RequestSubject("lima", "*"), natsbus.InboxPrefix("lima") + ".>"} {
		_, err := nc.SubscribeSync(subj)
		require.NoError(t, err)
	}
	require.NoError(t, nc.Publish(natsbus.RequestSubject("lima", "lima"), []byte(`{"v":1,"op":"list"}`)))
	require.NoError(t, nc.Flush())
	for _, want := range []string{`Subscription to "peerctl.v1.req.lima.*"`, `Subscription to "_INBOX.peerctl.lima.>"`, `Publish to "peerctl.v1.req.lima.lima"`} {
		eventually(t, 30*time.Second, "the servers to refuse mike's "+want, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(strings.Join(refused, "\n"), want)
		})
	}
}

// nkeyOption is the option of an nkey seed file.
func nkeyOption(t *testing.T, path string) nats.Option {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(path)
	require.NoError(t, err)
	return opt
}
