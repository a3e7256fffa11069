package serve

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// readFleet reads a "fleet" answer as written: its line, then the
// document of FleetDoc bytes.
func readFleet(t *testing.T, b []byte) (Answer, []byte) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	var a Answer
	require.NoError(t, ReadLine(r, &a))
	rest := make([]byte, r.Buffered())
	_, _ = r.Read(rest)
	return a, rest
}

// The "fleet" answer with its document: the line carries the notes and
// Partial, the document is list --json's of the sessions (escaped as
// peerctl prints), made once a generation of the view; an older client's
// request gets the listing whole; another bus gets none.
func TestFleetAnswerIsListJSONsDocumentKeptByGeneration(t *testing.T) {
	l := wire.Listing{Sessions: []wire.Session{{Host: "nats:alpha", Harness: "claude-code", PID: 7, Name: "api\x1b[2J\u202e"}}, Partial: true,
		Notes: []string{"node alpha: warning: qwen-code: not read"}}
	gen, built := uint64(1), 0
	view := &wiring.FleetView{URLs: "nats://a:4222,nats://b:4222"}
	view.Keep(func() (wire.Listing, uint64, bool) { built++; return l, gen, true })
	s := newServer(t.Context(), Options{Fleet: view})

	a, doc := readFleet(t, s.fleet(Request{Op: "fleet", Bus: "nats://a:4222, nats://b:4222", Doc: true}))
	require.NotNil(t, a.Fleet)
	assert.True(t, a.Done)
	assert.Equal(t, wire.Listing{Partial: true, Notes: l.Notes}, *a.Fleet, "the line: notes and partial, no sessions")
	var want bytes.Buffer
	require.NoError(t, wire.EncodeJSON(&want, l.Sessions, "  ", false))
	assert.Equal(t, want.String(), string(doc), "the document: list --json's")
	assert.Equal(t, len(doc), a.FleetDoc)
	assert.Contains(t, string(doc), `"api\u001b[2J\u202e"`)
	assert.True(t, wire.Printed(doc))

	l.Sessions = nil // the same generation: the answer kept
	_, again := readFleet(t, s.fleet(Request{Op: "fleet", Bus: "nats://a:4222,nats://b:4222", Doc: true}))
	assert.Equal(t, string(doc), string(again), "one encoding a generation")
	gen++
	_, next := readFleet(t, s.fleet(Request{Op: "fleet", Bus: "nats://a:4222,nats://b:4222", Doc: true}))
	assert.Equal(t, "[]\n", string(next), "a new generation: encoded again")

	l.Sessions = []wire.Session{{Host: "nats:alpha", PID: 8}}
	old, rest := readFleet(t, s.fleet(Request{Op: "fleet", Bus: "nats://a:4222,nats://b:4222"}))
	require.NotNil(t, old.Fleet)
	assert.Equal(t, l, *old.Fleet, "an older client's request: the listing whole")
	assert.Zero(t, old.FleetDoc)
	assert.Empty(t, rest)

	none, _ := readFleet(t, s.fleet(Request{Op: "fleet", Bus: "nats://c:4222", Doc: true}))
	assert.Nil(t, none.Fleet, "another bus")
	assert.True(t, none.Done)
}
