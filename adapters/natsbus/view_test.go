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

// A service's live view of the fleet gives what list --fleet reads from
// the bucket, the same document (hostile nodes, notes and partial
// listings included), and follows nodes joining and leaving.
func TestFleetViewGivesWhatFleetReads(t *testing.T) {
	url := natstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))

	var v FleetView
	_, ok := v.Listing()
	assert.False(t, ok, "a view not kept yet gives nothing")
	done := make(chan error, 1)
	go func() { done <- connect(t, url).KeepFleet(ctx, &v, nil) }()
	t.Cleanup(func() { cancel(); <-done })

	same := func(why string) wire.Listing {
		t.Helper()
		want, err := connect(t, url).Fleet(ctx)
		require.NoError(t, err)
		var got wire.Listing
		require.Eventually(t, func() bool {
			got, ok = v.Listing()
			return ok && assert.ObjectsAreEqual(want, got)
		}, 30*time.Second, 10*time.Millisecond, "%s: the view gives %+v, the bucket %+v", why, got, want)
		return got
	}
	l := same("one node")
	require.Len(t, l.Sessions, 1)

	b, err := connect(t, url).Join(ctx, member("beta", "o2"))
	require.NoError(t, err)
	api := session(201, "api\x1b[2J")
	api.Endpoint = "cc-peer:v1:201:api%1B[2J:/run/cc/201.sock"
	require.NoError(t, b.Publish(ctx, wire.Listing{Sessions: []wire.Session{api, session(202, "web")}, Partial: true, Notes: []string{"warning: qwen-code: not read"}}))
	kv, err := connect(t, url).presence(ctx, false)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "evil", []byte("\x1b[2J{"))
	require.NoError(t, err)
	l = same("a node joined, a hostile one beside it")
	assert.Len(t, l.Sessions, 3)
	assert.True(t, l.Partial)

	require.NoError(t, b.Leave(ctx))
	l = same("a node left")
	assert.Len(t, l.Sessions, 1)
}

// Over MaxNodes, the view keeps the nodes most recently updated, as
// Bus.Fleet does, and its listing is partial.
func TestFleetViewOverTheNodeCapKeepsTheNewestNodes(t *testing.T) {
	defer func(n int) { maxNodes = n }(maxNodes)
	maxNodes = 2
	url := natstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	bus := connect(t, url)
	publish := func(node string) {
		p, err := bus.Join(ctx, member(node, "o-"+node))
		require.NoError(t, err)
		require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	}
	publish("zeta")
	var v FleetView
	done := make(chan error, 1)
	go func() { done <- connect(t, url).KeepFleet(ctx, &v, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, node := range []string{"alpha", "mid", "zeta"} { // zeta again: alpha is the oldest
		publish(node)
	}
	var hosts []string
	var l wire.Listing
	require.Eventually(t, func() bool {
		var ok bool
		l, ok = v.Listing()
		hosts = hosts[:0]
		for _, s := range l.Sessions {
			hosts = append(hosts, s.Host)
		}
		return ok && assert.ObjectsAreEqual([]string{"nats:mid", "nats:zeta"}, hosts)
	}, 30*time.Second, 10*time.Millisecond, "the view gives %v", hosts)
	assert.True(t, l.Partial)
}

// The view's generation (what the service's encoded answer is kept by)
// stays over a refresh of the same presence, a newer document with the
// same sessions, and changes when a node's sessions do.
func TestFleetViewGenerationStaysOverARefresh(t *testing.T) {
	url := natstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	one := wire.Listing{Sessions: []wire.Session{session(101, "proj")}}
	require.NoError(t, a.Publish(ctx, one))

	var v FleetView
	done := make(chan error, 1)
	go func() { done <- connect(t, url).KeepFleet(ctx, &v, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	var gen uint64
	require.Eventually(t, func() bool {
		l, g, ok := v.Snapshot()
		gen = g
		return ok && len(l.Sessions) == 1
	}, 30*time.Second, 10*time.Millisecond)

	kv, err := connect(t, url).presence(ctx, false)
	require.NoError(t, err)
	before, err := kv.Get(ctx, "alpha")
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, one)) // a refresh, later: another updatedAt
	require.Eventually(t, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.revs["alpha"] > before.Revision()
	}, 30*time.Second, 10*time.Millisecond, "the view saw the refresh")
	l, g, ok := v.Snapshot()
	require.True(t, ok)
	assert.Equal(t, gen, g, "a refresh of the same sessions keeps the generation")
	assert.Len(t, l.Sessions, 1)

	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj"), session(102, "web")}}))
	require.Eventually(t, func() bool {
		l, g, ok := v.Snapshot()
		return ok && g != gen && len(l.Sessions) == 2
	}, 30*time.Second, 10*time.Millisecond, "a change of the sessions is a new generation")
}
