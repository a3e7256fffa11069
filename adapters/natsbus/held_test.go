package natsbus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// heldFor is the receipt of a node's service that kept a send to address,
// held by its trust policy, as message 7 of its outbox.
func heldFor(address string) wire.Sent {
	return wire.Sent{Receipt: wire.Receipt{OK: true, Outcome: "awaiting_approval", Detail: "held by default rule 1",
		Outbox:    &wire.OutboxRef{ID: 7, State: "awaiting_approval", Address: address, Rule: "default rule 1: hold from=node:* to=*"},
		Sender:    &wire.Sender{Entrance: "node", Where: "alpha", As: "node:alpha"},
		ElapsedMs: 3}}
}

// A send the node's policy holds comes back as what its service kept: a
// receipt naming no session, its message awaiting approval on that node
// with the rule, exit 0. One whose message is for another address than
// the one asked for is outcome_unknown, as a receipt for another session
// is; so is one that says held without its message.
func TestAHeldSendIsReadAsKept(t *testing.T) {
	url := natstest.Start(t)
	far := &farNode{receipt: func(q wire.SendQuery) (wire.Sent, error) { return heldFor(q.Address), nil }}
	serveNode(t, url, "beta", far)
	n := nodeOf(t, url, "alpha", "beta", 30*time.Second)
	ctx := context.Background()

	sent, err := n.Send(ctx, wire.SendQuery{Address: "inbox", Text: "hi", AwaitReply: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, wire.ExitOK, sent.Code)
	out := sent.Receipt
	assert.Equal(t, "awaiting_approval", out.Outcome)
	assert.Equal(t, "nats:beta", out.Host)
	require.NotNil(t, out.Outbox)
	assert.Equal(t, int64(7), out.Outbox.ID)
	assert.Equal(t, "default rule 1: hold from=node:* to=*", out.Outbox.Rule)

	for name, receipt := range map[string]func(wire.SendQuery) (wire.Sent, error){
		"for another address": func(wire.SendQuery) (wire.Sent, error) { return heldFor("other"), nil },
		"without its message": func(q wire.SendQuery) (wire.Sent, error) {
			s := heldFor(q.Address)
			s.Receipt.Outbox = nil
			return s, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			far.receipt = receipt
			_, err := n.Send(ctx, wire.SendQuery{Address: "inbox", Text: "hi"})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
		})
	}
}
