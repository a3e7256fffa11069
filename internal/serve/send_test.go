package serve

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// fullOutbox is an outbox on a full disk: every write fails with ENOSPC,
// as the SQLite file's writes would (outbox.Error wraps it).
type fullOutbox struct {
	ports.Outbox
	path string
}

func (f fullOutbox) Put(context.Context, ports.OutboxMessage) (ports.OutboxMessage, bool, error) {
	return ports.OutboxMessage{}, false, &outbox.Error{Path: f.path, Op: "store a message", Err: syscall.ENOSPC}
}

// homes are settings whose harness homes are empty folders of the test.
func homes(t *testing.T) wire.Settings {
	home := t.TempDir()
	return wire.Settings{Flags: map[string]string{"config-dir": filepath.Join(home, "claude"), "qwen-home": filepath.Join(home, "qwen"),
		"codex-home": filepath.Join(home, "codex")}}
}

// A durable send while the disk is full is refused with outbox_unavailable,
// naming the file and the cause and saying a plain send still works; it
// says nothing was stored, and nothing is.
func TestDurableSendOnAFullDiskIsRefused(t *testing.T) {
	s := newServer(t.Context(), Options{})
	s.ob = app.NewOutbox(fullOutbox{path: "state/outbox.db"}, nil)
	stored := false
	a := s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "the nightly build broke", Timeout: time.Second},
		Durable: time.Hour, Settings: homes(t)}, func(Ref) { stored = true })
	require.NotNil(t, a.Refusal, "%+v", a)
	r, ok := domain.AsRefusal(a.Refusal.Err())
	require.True(t, ok)
	assert.Equal(t, domain.ReasonOutboxUnavailable, r.Reason)
	for _, want := range []string{"state/outbox.db", "no space left on device", "the file is kept as it is", "nothing was stored", "without --durable still works"} {
		assert.Contains(t, r.Detail, want)
	}
	assert.False(t, stored)
	assert.Empty(t, s.inflight)
}

// policyServer is a Server with an outbox of its own, whose trust policy
// file holds rules.
func policyServer(t *testing.T, rules string) *Server {
	xdg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "peerctl"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "peerctl", "policy"), []byte(rules), 0o600))
	s := newServer(t.Context(), Options{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return xdg
		}
		return ""
	}})
	st, err := outbox.Open(t.Context(), filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s.store, s.ob = st, app.NewOutbox(st, nil)
	return s
}

// The service decides the trust policy itself, with the sender the order
// carries (a client's decision alone is not trusted): a deny refuses, a
// hold keeps the message awaiting approval (a plain send too), which the
// approve op stores for delivery and the deny op ends.
func TestServiceDecidesThePolicyAgain(t *testing.T) {
	mcp := domain.NewSender(domain.EntranceMCP, "")
	order := func(from domain.Sender) wire.SendOrder {
		return wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "rm -rf", Timeout: time.Second}, Settings: homes(t), Sender: from}
	}
	s := policyServer(t, "deny from=mcp to=*\n")
	a := s.send(t.Context(), order(mcp), func(Ref) { t.Fatal("nothing is stored") })
	require.NotNil(t, a.Refusal, "%+v", a)
	assert.Equal(t, "not_allowed", a.Refusal.Reason)
	assert.Contains(t, string(a.Refusal.Detail), "deny by rule 1 (deny from=mcp to=*)")

	s = policyServer(t, "hold from=mcp to=*\n")
	var stored *Ref
	a = s.send(t.Context(), order(mcp), func(r Ref) { stored = &r })
	require.Nil(t, a.Refusal, "%+v", a.Refusal)
	require.NotNil(t, a.Sent)
	assert.True(t, a.Kept)
	assert.Equal(t, "awaiting_approval", a.Sent.Receipt.Outcome)
	require.NotNil(t, a.Sent.Receipt.Sender)
	assert.Equal(t, "mcp", a.Sent.Receipt.Sender.Entrance)
	require.NotNil(t, stored)
	assert.Equal(t, "awaiting_approval", a.Ref.State)
	assert.Equal(t, "rule 1: hold from=mcp to=*", a.Ref.Rule)
	m, _, err := s.store.Get(t.Context(), a.Ref.ID)
	require.NoError(t, err)
	assert.Equal(t, app.DefaultTTL, m.Expires.Sub(m.Created), "a plain send held is a durable one once approved")

	cli := &wire.Sender{Entrance: "cli", SessionName: "lead"}
	got := s.Serve(t.Context(), Request{V: Protocol, Op: "approve", ID: a.Ref.ID, By: cli}, nil)
	require.NotNil(t, got.Message, "%+v", got)
	assert.Equal(t, "stored", got.Message.Doc.State)
	assert.Equal(t, "cli:lead", got.Message.Doc.ApprovedBy)
	got = s.Serve(t.Context(), Request{V: Protocol, Op: "approve", ID: a.Ref.ID, By: cli}, nil)
	require.NotNil(t, got.Refusal)
	assert.Equal(t, "wrong_state", got.Refusal.Reason)
	got = s.Serve(t.Context(), Request{V: Protocol, Op: "deny", ID: 99, By: cli}, nil)
	require.NotNil(t, got.Refusal)
	assert.Equal(t, "not_found", got.Refusal.Reason)
}

// Another node's send the trust policy holds is kept as any held send is
// (Keep: the service's hold use case): stored awaiting approval with its
// sender node:NAME and the rule, under the service's own settings, its
// receipt saying so with the message; the approve op stores it for
// delivery. A deny is its refusal, and nothing is stored.
func TestKeepStoresANodesHeldSend(t *testing.T) {
	s := policyServer(t, "deny from=node:mallory to=*\n")
	s.o.Settings = homes(t)
	q := wire.SendQuery{Address: "reviewer", Text: "the schema changed", Timeout: time.Second, AwaitReply: time.Minute}
	decided := func(node string) (domain.Sender, error) {
		from := domain.NewSender(domain.EntranceNode, node)
		return from, s.decide(t.Context(), wire.SendOrder{Query: q, Settings: s.o.Settings, Sender: from}, domain.Dest{}, sendingOf(wire.SendOrder{Sender: from}, false))
	}

	from, err := decided("mallory")
	require.Error(t, err)
	_, err = s.Keep(t.Context(), q, from, err)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
	all, err := s.store.List(t.Context(), ports.OutboxFilter{})
	require.NoError(t, err)
	assert.Empty(t, all, "a deny stores nothing")

	from, err = decided("alpha")
	_, held := domain.AsHeld(err)
	require.True(t, held, "%v", err)
	sent, err := s.Keep(t.Context(), q, from, err)
	require.NoError(t, err)
	out := sent.Receipt
	assert.True(t, out.OK)
	assert.Equal(t, "awaiting_approval", out.Outcome)
	require.NotNil(t, out.Outbox)
	assert.Equal(t, "awaiting_approval", out.Outbox.State)
	assert.Equal(t, "reviewer", out.Outbox.Address)
	assert.Equal(t, "default rule 1: hold from=node:* to=*", out.Outbox.Rule)
	assert.Contains(t, out.Detail, "default rule 1")
	require.NotNil(t, out.Sender)
	assert.Equal(t, "node:alpha", out.Sender.As)
	m, _, err := s.store.Get(t.Context(), out.Outbox.ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OutboxAwaitingApproval, m.State)
	assert.Equal(t, "the schema changed", m.Text)
	o, err := loadOrder(m)
	require.NoError(t, err)
	assert.Equal(t, s.o.Settings, o.Settings, "delivered with the service's own settings once approved")
	assert.Equal(t, "node:alpha", wire.SenderOf(o.Sender).As)

	got := s.Serve(t.Context(), Request{V: Protocol, Op: "approve", ID: out.Outbox.ID, By: &wire.Sender{Entrance: "cli"}}, nil)
	require.NotNil(t, got.Message, "%+v", got)
	assert.Equal(t, "stored", got.Message.Doc.State)
}
