package natsbus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// fleetWatch runs WatchFleet on its own connection until the test ends:
// next is its next event, noted its notes so far.
func fleetWatch(t *testing.T, url string) (next func() wire.Event, notes chan string, done chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan wire.Event, 64)
	notes = make(chan string, 64)
	done = make(chan error, 1)
	b := connect(t, url)
	go func() {
		done <- b.WatchFleet(ctx, func(e wire.Event) bool { got <- e; return true }, func(n string) { notes <- n })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() wire.Event {
		t.Helper()
		select {
		case e := <-got:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30 s")
		}
		return wire.Event{}
	}, notes, done
}

// watch --fleet follows every node's presence from one watch of the
// bucket: the live sessions first, then a node's changes as watch --host
// nats:NODE gives them, a node that joins as its sessions appearing, a
// node that leaves as its sessions gone and a left event; a presence
// refused is left out with a note.
func TestWatchFleetFollowsEveryNode(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	a, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	b, err := connect(t, url).Join(ctx, member("beta", "o2"))
	require.NoError(t, err)
	proj, api := session(101, "proj"), session(201, "api")
	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{proj}}))
	require.NoError(t, b.Publish(ctx, wire.Listing{Sessions: []wire.Session{api}}))

	next, notes, _ := fleetWatch(t, url)
	byHost := map[string]wire.Event{}
	for range 2 {
		e := next()
		assert.Equal(t, "appeared", e.Event)
		assert.True(t, e.Initial)
		byHost[e.Host] = e
	}
	assert.Equal(t, "nats:v1:alpha:"+proj.Endpoint, byHost["nats:alpha"].Endpoint)
	assert.Equal(t, "nats:v1:beta:"+api.Endpoint, byHost["nats:beta"].Endpoint)

	c, err := connect(t, url).Join(ctx, member("gamma", "o3"))
	require.NoError(t, err)
	require.NoError(t, c.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(301, "web")}}))
	e := next()
	assert.Equal(t, []any{"appeared", "nats:gamma", "web", false}, []any{e.Event, e.Host, e.Name, e.Initial})

	waiting := api
	waiting.Status, waiting.WaitingFor = "waiting", "permission"
	require.NoError(t, b.Publish(ctx, wire.Listing{Sessions: []wire.Session{waiting}}))
	e = next()
	assert.Equal(t, []any{"status", "nats:beta", "idle", "waiting", "permission"}, []any{e.Event, e.Host, e.PreviousStatus, e.Status, e.WaitingFor})

	renamed := proj
	renamed.Name = "proj2"
	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{renamed}}))
	e = next()
	assert.Equal(t, []any{"renamed", "nats:alpha", "proj", "proj2"}, []any{e.Event, e.Host, e.PreviousName, e.Name})

	require.NoError(t, b.Leave(ctx))
	e = next()
	assert.Equal(t, []any{"gone", "nats:beta", "api", "removed"}, []any{e.Event, e.Host, e.Name, e.Verdict})
	e = next()
	assert.Equal(t, []any{wire.EventLeft, "nats:beta"}, []any{e.Event, e.Host})
	assert.Contains(t, e.Reason, "node beta left the fleet's bus")

	kv, err := connect(t, url).presence(ctx, false)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "evil", []byte("\x1b[2J{"))
	require.NoError(t, err)
	select {
	case n := <-notes:
		assert.Contains(t, n, "warning: node evil left out")
		assert.NotContains(t, n, "\x1b")
	case <-time.After(30 * time.Second):
		t.Fatal("no note for a presence refused")
	}
	require.NoError(t, c.Publish(ctx, wire.Listing{}))
	e = next()
	assert.Equal(t, []any{"gone", "nats:gamma", "web"}, []any{e.Event, e.Host, e.Name}, "the refused node made no event")
}

// A fleet watch started before any node joined waits for the bucket.
func TestWatchFleetWaitsForTheFirstNode(t *testing.T) {
	url := natstest.Start(t)
	next, notes, _ := fleetWatch(t, url)
	select {
	case n := <-notes:
		assert.Contains(t, n, "no node has joined the bus yet")
	case <-time.After(30 * time.Second):
		t.Fatal("no note for a bus with no node")
	}
	ctx := context.Background()
	a, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	e := next()
	assert.Equal(t, []any{"appeared", "nats:alpha", "proj"}, []any{e.Event, e.Host, e.Name})
}
