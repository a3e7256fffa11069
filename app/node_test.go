package app

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// fakeNode is a Node whose listing is given, after an optional wait on
// gate (a host that hangs until the call's context ends).
type fakeNode struct {
	host    domain.Dest
	listing wire.Listing
	err     error
	hang    bool
	calls   *atomic.Int32
	peak    *atomic.Int32
	gate    chan struct{}
}

func (f fakeNode) Host() domain.Dest { return f.host }

func (f fakeNode) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	if f.calls != nil {
		n := f.calls.Add(1)
		defer f.calls.Add(-1)
		for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
		}
	}
	if f.hang {
		<-ctx.Done()
		return wire.Listing{}, domain.Refuse(domain.ReasonHostUnreachable, "no answer from %s before the call ended", f.host)
	}
	if f.gate != nil {
		<-f.gate
	}
	return f.listing, f.err
}

func (fakeNode) Show(context.Context, string) (wire.Show, error) { return wire.Show{}, nil }

func (fakeNode) Enrich(context.Context, []string) (map[string]wire.LiveInfo, error) {
	return nil, nil
}

func (fakeNode) Send(context.Context, wire.SendQuery) (wire.Sent, error) { return wire.Sent{}, nil }

func (fakeNode) Doctor(context.Context) (wire.Doctor, error) { return wire.Doctor{}, nil }

func (fakeNode) Watch(context.Context, func(wire.Event) bool, func(string)) error { return nil }

func (fakeNode) Relay(context.Context, wire.RelayQuery, io.Reader, func(wire.RelayLine) error) error {
	return nil
}

func dest(t *testing.T, s string) domain.Dest {
	t.Helper()
	d, err := domain.ParseDest(s)
	require.NoError(t, err)
	return d
}

func session(host, id string) wire.Session { return wire.Session{Host: host, SessionID: id} }

// The fan-out keeps the order of the nodes, whatever order they answer
// in; a node that failed is one warning after its notes, and the others'
// sessions are all kept.
func TestMergeKeepsOrderAndEveryAnswer(t *testing.T) {
	a, b := dest(t, "a"), dest(t, "b")
	nodes := []Node{
		fakeNode{listing: wire.Listing{Sessions: []wire.Session{session("", "l1")}, Notes: []string{"registry folder missing"}}},
		fakeNode{host: a, hang: true},
		fakeNode{host: b, listing: wire.Listing{Sessions: []wire.Session{session("b", "b1"), session("b", "b2")}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	m := Merge(ListNodes(ctx, nodes, wire.ListQuery{}))
	assert.Equal(t, []wire.Session{session("", "l1"), session("b", "b1"), session("b", "b2")}, m.Sessions)
	require.Len(t, m.Notes, 2)
	assert.Equal(t, NodeNote{Text: "registry folder missing"}, m.Notes[0])
	assert.Equal(t, a, m.Notes[1].Host)
	assert.True(t, m.Notes[1].Warning)
	assert.Contains(t, m.Notes[1].Text, "not listed, its sessions are left out: host_unreachable: no answer from a")
	assert.Equal(t, ListUnreachable, m.Outcome)
	assert.Equal(t, "host a", Where(a))
	assert.Equal(t, "this machine", Where(domain.Dest{}))
}

// Precedence: an unreachable host wins over a partial listing or another
// failure, which win over a complete one.
func TestOutcomePrecedence(t *testing.T) {
	unreachable := domain.Refuse(domain.ReasonHostUnreachable, "down")
	for name, tc := range map[string]struct {
		ls   []NodeListing
		want ListOutcome
	}{
		"none":                      {nil, ListComplete},
		"all answered":              {[]NodeListing{{}, {}}, ListComplete},
		"one partial":               {[]NodeListing{{}, {Listing: wire.Listing{Partial: true}}}, ListPartial},
		"one failed its own way":    {[]NodeListing{{Err: errors.New("boom")}, {}}, ListPartial},
		"a refusal not of a host":   {[]NodeListing{{Err: domain.Refuse(domain.ReasonNotLive, "x")}}, ListPartial},
		"unreachable after partial": {[]NodeListing{{Listing: wire.Listing{Partial: true}}, {Err: unreachable}}, ListUnreachable},
		"unreachable first":         {[]NodeListing{{Err: unreachable}, {Err: errors.New("boom")}}, ListUnreachable},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Outcome(tc.ls))
			assert.Equal(t, tc.want, Merge(tc.ls).Outcome)
		})
	}
}

// Nodes are reached at once, never more than MaxParallelNodes at a time:
// hosts that hang cost one timeout in all.
func TestListNodesIsParallelAndBounded(t *testing.T) {
	var calls, peak atomic.Int32
	gate := make(chan struct{})
	nodes := make([]Node, 3*MaxParallelNodes)
	for i := range nodes {
		nodes[i] = fakeNode{host: dest(t, "h"), calls: &calls, peak: &peak, gate: gate}
	}
	done := make(chan []NodeListing)
	go func() { done <- ListNodes(context.Background(), nodes, wire.ListQuery{}) }()
	require.Eventually(t, func() bool { return calls.Load() == MaxParallelNodes }, 30*time.Second, time.Millisecond,
		"every node waits, so as many are listed at once as the bound allows")
	time.Sleep(50 * time.Millisecond) // room for a call over the bound to start
	assert.Equal(t, int32(MaxParallelNodes), peak.Load(), "no more than the bound at once")
	close(gate)
	assert.Len(t, <-done, len(nodes))
}

// stackNode records the stack its List runs on.
type stackNode struct {
	fakeNode
	stack *string
}

func (s stackNode) List(ctx context.Context, q wire.ListQuery) (wire.Listing, error) {
	buf := make([]byte, 64<<10)
	*s.stack = string(buf[:runtime.Stack(buf, false)])
	return s.fakeNode.List(ctx, q)
}

// One node (the plain local list) is listed on the caller's goroutine, not
// on a fresh one whose stack grows anew.
func TestListNodesListsOneNodeInline(t *testing.T) {
	var stack string
	want := wire.Listing{Partial: true}
	got := ListNodes(context.Background(), []Node{stackNode{fakeNode{host: dest(t, "h"), listing: want}, &stack}}, wire.ListQuery{})
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0].Listing)
	assert.Equal(t, dest(t, "h"), got[0].Host)
	assert.Contains(t, stack, "TestListNodesListsOneNodeInline", "listed on the caller's goroutine")
}
