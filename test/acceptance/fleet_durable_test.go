//go:build unix

package acceptance

// Durable mail across machines on the built binary, hermetic (an embedded
// NATS server, test/natstest): node alpha (this test, by adapters/natsbus
// as its service would) puts a durable send in node beta's mail while
// beta's service is down; beta's service, started, stops (SIGKILL) between
// storing it and acknowledging it; started again, it delivers it to its
// fake Claude Code session once, the redelivered mail found stored by its
// key; the same key again is the same message; alpha reads the receipts
// (stored, then delivered).

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// mailReceipts are the receipts a node read, as "FROM KEY STATE: HISTORY'S STATES".
type mailReceipts struct {
	mu  sync.Mutex
	got []string
}

func (r *mailReceipts) take(_ context.Context, from string, m wire.MailReceipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var chain []string
	for _, e := range m.History {
		chain = append(chain, e.State)
	}
	r.got = append(r.got, fmt.Sprintf("%s %s %s: %s", from, m.Key, m.State, strings.Join(chain, " ")))
	return nil
}

func (r *mailReceipts) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.got, s)
}

// mailDrained reports whether node's mail consumer has nothing pending or
// unacknowledged.
func mailDrained(js jetstream.JetStream, node string) bool {
	c, err := js.Consumer(context.Background(), natsbus.MailStream, natsbus.InboxConsumer(node))
	if err != nil {
		return false
	}
	info, err := c.Info(context.Background())
	return err == nil && info.NumPending == 0 && info.NumAckPending == 0
}

func TestFleetDurableMailIsDeliveredOnceByItsNode(t *testing.T) {
	peerctlWithMCP(t)
	faulty := testbin.BuildTagged(t, testbin.PeerctlMCP, "peerctlfault")
	url := natstest.Start(t)
	ctx := context.Background()
	beta := newServeWorld(t)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)

	alpha, err := natsbus.Connect(natsbus.Settings{URLs: url, Node: "alpha", Name: "alpha"}, false)
	require.NoError(t, err)
	t.Cleanup(alpha.Close)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var receipts mailReceipts
	stopR, err := alpha.TakeReceipts(ctx, "alpha", receipts.take, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stopR()

	// beta's service is down: the mail waits on the bus.
	order := wire.SendOrder{Query: wire.SendQuery{Address: "inbox", Text: "rebase on main", ConfirmTimeout: 300 * time.Millisecond},
		Durable: time.Hour, Key: "pr-7"}
	require.NoError(t, alpha.PostMail(ctx, "beta", "alpha", order, 0))

	// Started, it stores the message and is killed before its ack.
	srv := exec.Command(faulty, "serve")
	srv.Env = append(beta.env(t), "PEERCTL_FAULT=stored")
	log := &testproc.Buffer{}
	srv.Stderr = log
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL); _ = srv.Wait() })
	eventually(t, 2*time.Minute, "beta's service to store the mail", func() bool { return strings.Contains(log.String(), "fault point stored reached") })
	_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
	_ = srv.Wait()
	kept := beta.outbox(t)
	require.Len(t, kept, 1, "%s", log)
	assert.Equal(t, "nats:alpha:pr-7", kept[0].Key)
	assert.Equal(t, "stored", kept[0].State)
	assert.Empty(t, beta.listener.Frames(), "nothing delivered yet")

	// Started again: delivered once; the mail, given again after its ack
	// wait, is found stored by its key and acknowledged.
	log = beta.startServeWith(t)
	eventually(t, 2*time.Minute, "beta's service to deliver it", func() bool { return len(beta.listener.Frames()) > 0 })
	frames := beta.listener.Frames()
	require.Len(t, frames, 1)
	assert.Contains(t, string(frames[0]), "rebase on main")
	eventually(t, 3*time.Minute, "the redelivered mail to be acknowledged", func() bool { return mailDrained(js, "beta") })
	assert.Contains(t, log.String(), "node beta takes its durable mail")

	// The same key again (past the stream's own de-duplication: no
	// Nats-Msg-Id) is the same message.
	again, err := json.Marshal(wire.Mail{V: wire.MailVersion, Order: order})
	require.NoError(t, err)
	_, err = js.Publish(ctx, natsbus.InboxSubject("beta", "alpha"), again)
	require.NoError(t, err)
	eventually(t, 2*time.Minute, "the repeat to be acknowledged", func() bool { return mailDrained(js, "beta") })
	kept = beta.outbox(t)
	require.Len(t, kept, 1)
	eventually(t, time.Minute, "the message to be delivered", func() bool { return beta.show(t, kept[0].ID).State == "delivered" })
	assert.Len(t, beta.listener.Frames(), 1, "never twice")

	// alpha heard the chain.
	eventually(t, time.Minute, "alpha to read the receipts", func() bool {
		return receipts.saw("beta pr-7 delivered: stored delivering delivered")
	})
}

// A durable send to a node whose service is down: `send --durable --key K
// --host nats:beta` on alpha is stored, on the bus, by alpha's service
// (started on demand, joined to the bus); beta's service, started, delivers
// it once; alpha's outbox shows the far chain (stored there, delivered),
// and the same key again is the same message.
func TestFleetDurableSendWaitsForItsNodeAndShowsItsChain(t *testing.T) {
	_, alpha, beta := mailNodes(t, "allow")

	send := func() durableReceipt {
		r := alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "pr-9", "--host", "nats:beta", "inbox", "the schema changed")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		return decodeReceipt(t, r)
	}
	got := send()
	assert.True(t, got.OK)
	assert.Equal(t, "stored", got.Outcome)
	assert.Equal(t, "stored", got.Outbox.State)
	assert.Contains(t, got.Detail, "on the fleet's bus, in node beta's mail")
	id := got.Outbox.ID
	require.NotZero(t, alpha.servePID(t), "the durable send started alpha's service")
	assert.Empty(t, beta.listener.Frames(), "beta's service is down")

	beta.startServe(t)
	eventually(t, 2*time.Minute, "beta's service to deliver it", func() bool { return len(beta.listener.Frames()) > 0 })
	frames := beta.listener.Frames()
	require.Len(t, frames, 1)
	assert.Contains(t, string(frames[0]), "the schema changed")

	eventually(t, 2*time.Minute, "alpha's outbox to show the far delivery", func() bool { return alpha.show(t, id).State == "delivered" })
	shown := alpha.show(t, id)
	assert.Equal(t, "nats:beta", shown.Host)
	var chain []string
	for _, h := range shown.History {
		chain = append(chain, h.State)
	}
	assert.Equal(t, []string{"stored", "stored", "stored", "delivered"}, chain, "%+v", shown.History)
	assert.Contains(t, shown.History[len(shown.History)-1].Reason, "on nats:beta (message 1 there): ")

	dup := send()
	assert.Equal(t, id, dup.Outbox.ID)
	assert.True(t, dup.Outbox.Duplicate)
	assert.Len(t, beta.listener.Frames(), 1, "never twice")
	assert.Len(t, beta.outbox(t), 1)
}

// Durable sends to one address of a node whose service is down each go on
// the bus at once, not only the first: the order is the node's to keep
// (its mail is in order, its outbox delivers in order), so once the
// sender's machine is off every one still arrives, in order.
func TestFleetDurableSendsToOneAddressAllGoOnTheBus(t *testing.T) {
	_, alpha, beta := mailNodes(t, "allow")

	for i := 1; i <= 3; i++ {
		r := alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", fmt.Sprintf("k%d", i), "--host", "nats:beta", "inbox", fmt.Sprintf("step %d of 3", i))
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		if i == 1 { // the service started on demand is on the bus: it has no idle exit
			assert.Contains(t, string(r.Stderr), "it stays a node of the fleet's bus ($PEERCTL_NATS) until: peerctl serve stop")
			assert.NotContains(t, string(r.Stderr), "ends itself")
		}
		got := decodeReceipt(t, r)
		assert.Equal(t, "stored", got.Outcome)
		eventually(t, time.Minute, fmt.Sprintf("message %d on the bus", got.Outbox.ID), func() bool {
			return alpha.show(t, got.Outbox.ID).Transport == "bus"
		})
	}
	r := alpha.peerctl(t, nil, "serve", "stop")
	require.Equal(t, 0, r.Code, "the sender's machine is off now: %s", r.Stderr)

	beta.startServe(t)
	eventually(t, 2*time.Minute, "beta's service to deliver all three", func() bool { return len(beta.listener.Frames()) == 3 })
	for i, f := range beta.listener.Frames() {
		assert.Contains(t, string(f), fmt.Sprintf("step %d of 3", i+1), "in order")
	}
}

// outbox retry on the sender of a durable send to a node: while it waits
// for the node it is refused, saying where; refused there (beta's policy
// denied it when it came), it is posted again once beta's policy allows
// it and delivered once; a replay of that retry's post is nothing; a
// retry of a message delivered there is answered "not sent again".
func TestFleetDurableRetryOnTheSenderPostsItAgain(t *testing.T) {
	ctx := context.Background()
	url, alpha, beta := mailNodes(t, "deny")

	r := alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "pr-11", "--host", "nats:beta", "inbox", "retry me")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	sid := strconv.FormatInt(id, 10)

	r = alpha.peerctl(t, nil, "outbox", "retry", sid)
	assert.Equal(t, 16, r.Code, "wrong_state: it waits on the bus; stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "waits for node beta")
	assert.Contains(t, string(r.Stderr), "nothing to retry")

	beta.startServe(t)
	eventually(t, 2*time.Minute, "alpha to hear beta's refusal", func() bool { return alpha.show(t, id).State == "refused" })
	assert.Empty(t, beta.outbox(t), "denied when it came: never stored there")

	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "rm", "1")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	rb = runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	r = alpha.peerctl(t, nil, "outbox", "retry", "--json", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "posted to node beta again (its retry 1)")
	eventually(t, 2*time.Minute, "beta's service to deliver it", func() bool { return len(beta.listener.Frames()) > 0 })
	eventually(t, 2*time.Minute, "alpha's outbox to show the far delivery", func() bool { return alpha.show(t, id).State == "delivered" })

	// The retry's post again (past the stream's de-duplication: no
	// Nats-Msg-Id): the same retry, nothing new; a later number on a
	// message delivered there: not sent again, said back.
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	order := wire.SendOrder{Query: wire.SendQuery{Address: "inbox", Text: "retry me"}, Durable: time.Hour, Key: alpha.show(t, id).Key}
	for _, n := range []int{1, 2} {
		again, err := json.Marshal(wire.Mail{V: wire.MailVersion, Order: order, Retry: n})
		require.NoError(t, err)
		_, err = js.Publish(ctx, natsbus.InboxSubject("beta", "alpha"), again)
		require.NoError(t, err)
		eventually(t, 2*time.Minute, "the post to be taken", func() bool { return mailDrained(js, "beta") })
	}
	eventually(t, 2*time.Minute, "alpha to hear that it was not sent again", func() bool {
		return strings.Contains(alpha.show(t, id).Reason, "node alpha's outbox retry 2: it is delivered here, so it is not sent again")
	})
	kept := beta.outbox(t)
	require.Len(t, kept, 1)
	assert.Equal(t, "delivered", kept[0].State)
	assert.Len(t, beta.listener.Frames(), 1, "never twice")
	assert.Equal(t, "delivered", alpha.show(t, id).State)

	r = alpha.peerctl(t, nil, "outbox", "retry", sid)
	assert.Equal(t, 16, r.Code, "delivered: not retried; stderr: %s", r.Stderr)
}
