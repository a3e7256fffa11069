package dashboard

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// The state carries the fleet grouped by node, escaped; no bus, no fleet.
func TestStateCarriesTheFleetByNode(t *testing.T) {
	hostile := "<b>x</b>\x1b[2J"
	l := wire.Listing{Sessions: []wire.Session{
		{Host: "nats:alpha", Harness: "claude-code", SessionID: "a-1", PID: 1, Name: hostile, Status: "waiting", WaitingFor: "permission", Verdict: "live"},
		{Host: "nats:alpha", Harness: "qwen-code", SessionID: "a-2", PID: 2, Name: "api", Status: "idle", Verdict: "live", Addressable: true, Endpoint: "nats:v1:alpha:x"},
		{Host: "nats:beta", Harness: "codex", SessionID: "b-1", PID: 3, Name: "web", Status: "busy", Verdict: "live"},
	}}
	f := &fake{hosts: manySessions(1, 1), fleet: &l}
	d := newTest(t, f)
	state := func() State {
		b, err := d.Data(t.Context()) // read now
		require.NoError(t, err)
		var st State
		require.NoError(t, json.Unmarshal(b, &st))
		return st
	}
	st := state()
	require.Len(t, st.Fleet, 2)
	assert.Equal(t, "alpha", st.Fleet[0].Node)
	assert.Equal(t, NodeSessionView{Harness: "claude-code", Name: `<b>x</b>\x1b[2J`, SessionID: "a-1", PID: 1, Status: "waiting", WaitingFor: "permission"},
		st.Fleet[0].Sessions[0])
	assert.Equal(t, []NodeSessionView{{Harness: "codex", Name: "web", SessionID: "b-1", PID: 3, Status: "busy"}}, st.Fleet[1].Sessions)

	f.setFleet(nil)
	assert.Nil(t, state().Fleet, "no bus, no fleet")
}

// A message for a node of the fleet carries its chain there apart from
// its own: the node's changes grouped by its id there, their reasons
// without the head the outbox gives them, folded and escaped, the
// user's home as "~"; its reply, from there, is its reply; the last
// reason, the far chain's last line, is not repeated.
func TestMessageCarriesItsChainOnTheNode(t *testing.T) {
	node := "nats:<b>x</b>\x1b[2J"
	far := func(r string) string { return wire.FarHead(node, 7) + r }
	hist := []Event{{At: "t1", State: "stored", Reason: "sent"},
		{At: "t2", State: "stored", Reason: "on the fleet's bus, in node x's mail: its service takes it when it runs"},
		{At: "t3", State: "stored", Reason: far("stored")},
		{At: "t4", State: "stored", Reason: far("not_live: /home/u/.claude/sessions")},
		{At: "t5", State: "delivered", Reason: far("the harness took it (delivered)")},
		{At: "t6", State: "replied", Reason: far(wire.RepliedReason("api", "done \x1b[31m"))}}
	m := Message{ID: 3, State: "replied", Host: node, Address: "api", Reason: hist[5].Reason, History: hist}
	st := Build(time.Unix(0, 0), nil, []Message{m}, "", time.Minute, "")
	require.Len(t, st.Messages, 1)
	got := st.Messages[0]
	assert.Equal(t, []Event{{At: "t2", State: "stored", Reason: "on the fleet's bus, in node x's mail: its service takes it when it runs", Count: 2}}, got.History)
	require.Len(t, got.Far, 1)
	assert.Equal(t, `nats:<b>x</b>\x1b[2J`, got.Far[0].Where, "escaped")
	assert.Equal(t, int64(7), got.Far[0].ID)
	assert.Equal(t, []Event{{At: "t4", State: "stored", Reason: "not_live: /home/u/.claude/sessions", Count: 2},
		{At: "t5", State: "delivered", Reason: "the harness took it (delivered)"},
		{At: "t6", State: "replied", Reason: `the session replied (from \"api\", 10 bytes): done \x1b[31m`}}, got.Far[0].History)
	assert.Empty(t, got.Reason, "the far chain's last line is not said twice")
	require.NotNil(t, got.Reply)
	assert.Equal(t, ReplyView{From: "api", Text: `done \x1b[31m`}, *got.Reply)

	views := messageViews([]Message{m}, "/home/u")
	assert.Equal(t, "not_live: ~/.claude/sessions", views[0].Far[0].History[0].Reason, "the user's home as ~")
	assert.Equal(t, hist, m.History, "the caller's history stays as it is")

	// A message for this machine, or whose reasons name another node,
	// has no far chain.
	st = Build(time.Unix(0, 0), nil, []Message{{ID: 4, State: "stored", History: hist}, {ID: 5, State: "stored", Host: "nats:other", History: hist}}, "", time.Minute, "")
	assert.Empty(t, st.Messages[0].Far)
	assert.Empty(t, st.Messages[1].Far)
}
