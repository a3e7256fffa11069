package dashboard

import (
	"encoding/json"
	"testing"

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
