//go:build unix

package acceptance

// What a node's receipts may do to the sender's copy of a durable message
// (docs/FLEET.md, "Durable sends"), on the built binary, hermetic (an
// embedded NATS server): a message past its sender's deadline is never
// delivered by its node; `outbox cancel` of a message on the bus is
// refused, not called cancelled; a repeat of a key with another text does
// not turn the delivered message into refused.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// mailNodes are nodes alpha and beta on one embedded server, beta's policy
// deciding alpha's sends by rule (allow, deny, hold); neither service runs
// yet.
func mailNodes(t *testing.T, rule string) (url string, alpha, beta serveWorld) {
	peerctlWithMCP(t)
	url = natstest.Start(t)
	beta = newServeWorld(t)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", rule)
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	alpha = newServeWorld(t)
	alpha.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "XDG_CONFIG_HOME=" + t.TempDir()}
	return url, alpha, beta
}

// The sender's deadline holds on the node: a message that expired while
// its node's service was down is expired there too, never delivered, and
// the sender's `expired` stays.
func TestFleetMailPastItsDeadlineIsNeverDelivered(t *testing.T) {
	_, alpha, beta := mailNodes(t, "allow")
	r := alpha.peerctl(t, nil, "send", "--json", "--durable=5s", "--key", "ttl1", "--host", "nats:beta", "inbox", "must not arrive late")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	eventually(t, 2*time.Minute, "alpha's copy to expire", func() bool { return alpha.show(t, id).State == "expired" })

	beta.startServe(t)
	eventually(t, 2*time.Minute, "beta to take the mail", func() bool { return len(beta.outbox(t)) == 1 })
	eventually(t, 2*time.Minute, "beta's copy to expire", func() bool { return beta.outbox(t)[0].State == "expired" })
	assert.Empty(t, beta.listener.Frames(), "never delivered past its deadline")
	// A later message's chain comes back after the expired one's receipts.
	r = alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "next", "--host", "nats:beta", "inbox", "in time")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	next := decodeReceipt(t, r).Outbox.ID
	eventually(t, 2*time.Minute, "the next one delivered", func() bool { return alpha.show(t, next).State == "delivered" })
	assert.Equal(t, "expired", alpha.show(t, id).State)
}

// A message on the bus is its node's to cancel: `outbox cancel` refuses
// it (wrong_state, exit 16) saying how, it stays stored, and the node's
// receipt decides.
func TestFleetMailOnTheBusIsNotCancelledHere(t *testing.T) {
	_, alpha, beta := mailNodes(t, "allow")
	r := alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "c1", "--host", "nats:beta", "inbox", "on the bus")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	r = alpha.peerctl(t, nil, "outbox", "cancel", "1")
	assert.Equal(t, 16, r.Code, "stdout %s stderr %s", r.Stdout, r.Stderr)
	assert.Contains(t, string(r.Stderr), "on node beta run `peerctl outbox`")
	assert.Equal(t, "stored", alpha.show(t, id).State)

	beta.startServe(t)
	eventually(t, 2*time.Minute, "the node's receipt", func() bool { return alpha.show(t, id).State == "delivered" })
}

// A repeat of a delivered message's key with another text, put in the
// node's mail by hand, is dropped there: the sender's message stays
// delivered.
func TestFleetMailRepeatWithAnotherTextLeavesTheFirstDelivered(t *testing.T) {
	url, alpha, beta := mailNodes(t, "allow")
	log := beta.startServeWith(t)
	r := alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "k1", "--host", "nats:beta", "inbox", "hello")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	eventually(t, 2*time.Minute, "delivered", func() bool { return alpha.show(t, id).State == "delivered" })

	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	evil, err := json.Marshal(wire.Mail{V: wire.MailVersion, Order: wire.SendOrder{Query: wire.SendQuery{Address: "inbox", Text: "evil"}, Key: "k1", Durable: time.Hour}})
	require.NoError(t, err)
	_, err = js.Publish(context.Background(), natsbus.InboxSubject("beta", "alpha"), evil)
	require.NoError(t, err)
	eventually(t, 2*time.Minute, "beta to drop the repeat", func() bool { return strings.Contains(log.String(), "again, with another address or text: dropped") })

	// A later message's receipts come after any the repeat caused.
	r = alpha.peerctl(t, nil, "send", "--json", "--durable", "--key", "k2", "--host", "nats:beta", "inbox", "after")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	k2 := decodeReceipt(t, r).Outbox.ID
	eventually(t, 2*time.Minute, "k2 delivered", func() bool { return alpha.show(t, k2).State == "delivered" })
	assert.Equal(t, "delivered", alpha.show(t, id).State)
	assert.Len(t, beta.listener.Frames(), 2, "the repeat is never delivered")
}
