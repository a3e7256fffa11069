package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// farNode is a node's use cases as its service answers them: canned
// answers, and who asked.
type farNode struct {
	mu      sync.Mutex
	senders []string
	sent    []wire.SendQuery
	listing wire.Listing
	show    wire.Show
	receipt func(q wire.SendQuery) (wire.Sent, error)
	err     error
}

func (f *farNode) from(sender string) Answering {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.senders = append(f.senders, sender)
	return f
}

func (f *farNode) List(context.Context, wire.ListQuery) (wire.Listing, error) {
	return f.listing, f.err
}
func (f *farNode) Show(context.Context, string) (wire.Show, error) { return f.show, f.err }
func (f *farNode) Enrich(context.Context, []string) (map[string]wire.LiveInfo, error) {
	return map[string]wire.LiveInfo{}, f.err
}
func (f *farNode) Doctor(context.Context) (wire.Doctor, error) {
	return wire.Doctor{}, errors.New("no doctor here")
}
func (f *farNode) Send(_ context.Context, q wire.SendQuery) (wire.Sent, error) {
	f.mu.Lock()
	f.sent = append(f.sent, q)
	f.mu.Unlock()
	if f.err != nil {
		return wire.Sent{}, f.err
	}
	return f.receipt(q)
}

// receiptFor is the far harness's receipt for s.
func receiptFor(s wire.Session) wire.Sent {
	return wire.Sent{Receipt: wire.Receipt{OK: true, Outcome: "delivered", Transport: "courier", Harness: s.Harness, SessionID: s.SessionID,
		PID: s.PID, Name: s.Name, Endpoint: s.Endpoint, MsgID: "msg-1"}, Notes: []string{"peerctl: note: from beta"}}
}

// serveNode runs node's service on url, answering with far, until the
// test ends.
func serveNode(t *testing.T, url, node string, far *farNode) {
	t.Helper()
	b := connect(t, url)
	stop, err := b.Answer(context.Background(), node, "v0.far", far.from, func(l string) { t.Log(l) })
	require.NoError(t, err)
	t.Cleanup(stop)
}

func nodeOf(t *testing.T, url, me, node string, timeout time.Duration) *Node {
	t.Helper()
	dest, err := domain.NodeDest(node)
	require.NoError(t, err)
	n, err := NewNode(Settings{URLs: url, Node: me}, dest, timeout)
	require.NoError(t, err)
	return n
}

// A node's use cases over the bus: its listing, show and send answered by
// its service as its command line does, read back with its host and its
// endpoints in the nats:v1: form; the service knows the sender by the
// name its subject carries (dots in names included).
func TestRequestsReachTheNodesService(t *testing.T) {
	url := natstest.Start(t)
	s := session(301, "proj")
	far := &farNode{listing: wire.Listing{Sessions: []wire.Session{s}, Notes: []string{"warning: qwen-code: registry not read"}, Partial: true},
		show: wire.Show{Session: s, SocketOnDisk: "yes"}, receipt: func(wire.SendQuery) (wire.Sent, error) { return receiptFor(s), nil }}
	serveNode(t, url, "beta.lan", far)
	n := nodeOf(t, url, "alpha.lan", "beta.lan", 30*time.Second)
	ctx := context.Background()

	l, err := n.List(ctx, wire.ListQuery{})
	require.NoError(t, err)
	require.Len(t, l.Sessions, 1)
	assert.Equal(t, "nats:beta.lan", l.Sessions[0].Host)
	assert.Equal(t, "nats:v1:beta.lan:"+s.Endpoint, l.Sessions[0].Endpoint)
	assert.True(t, l.Partial)
	assert.Equal(t, []string{"warning: qwen-code: registry not read"}, l.Notes)
	assert.Equal(t, "v0.far", l.Version)

	sh, err := n.Show(ctx, s.SessionID)
	require.NoError(t, err)
	assert.Equal(t, "nats:v1:beta.lan:"+s.Endpoint, sh.Endpoint)

	q := wire.SendQuery{Address: s.Endpoint, Text: "hi \xff\x00 there", Timeout: time.Minute}
	sent, err := n.Send(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, "msg-1", sent.Receipt.MsgID)
	assert.Equal(t, "nats:beta.lan", sent.Receipt.Host)
	assert.Equal(t, []string{"peerctl: note: from beta"}, sent.Notes)
	require.Len(t, far.sent, 1)
	assert.Equal(t, q, far.sent[0], "the typed order crosses byte for byte")
	assert.Equal(t, []string{"alpha.lan", "alpha.lan", "alpha.lan"}, far.senders)
}

// A node with no service is host_unreachable naming the node, and nothing
// was sent.
func TestANodeWithNoServiceIsUnreachable(t *testing.T) {
	url := natstest.Start(t)
	n := nodeOf(t, url, "alpha", "gone", 30*time.Second)
	_, err := n.Send(context.Background(), wire.SendQuery{Address: "proj", Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	assert.Contains(t, r.Detail, "node gone has no service")
}

// The node's refusal is the send's (its reason, its words, headed with
// the node); a receipt for another session than the one named is refused
// as outcome_unknown; an answer that is not this build's is a broken far
// side; a send that goes out and gets no answer is outcome_unknown.
func TestWhatANodeAnswersIsChecked(t *testing.T) {
	url := natstest.Start(t)
	s, other := session(301, "proj"), session(302, "other")
	far := &farNode{receipt: func(wire.SendQuery) (wire.Sent, error) { return receiptFor(other), nil }}
	serveNode(t, url, "beta", far)
	n := nodeOf(t, url, "alpha", "beta", 30*time.Second)
	ctx := context.Background()

	_, err := n.Send(ctx, wire.SendQuery{Address: s.Endpoint, Text: "hi"})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "receipt for another session")

	far.err = domain.Refuse(domain.ReasonNotAllowed, "default rule 1 holds messages from node:alpha")
	_, err = n.Send(ctx, wire.SendQuery{Address: s.Endpoint, Text: "hi"})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotAllowed, r.Reason)
	assert.Equal(t, "on nats:beta: default rule 1 holds messages from node:alpha", r.Detail)

	// A hostile service: an answer with a key this build does not know.
	b := connect(t, url)
	sub, err := b.nc.Subscribe(RequestSubject("evil", "*"), func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"v":1,"version":"x","code":0,"doc":[],"stderr":[],"extra":1}`))
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	_, err = nodeOf(t, url, "alpha", "evil", 30*time.Second).List(ctx, wire.ListQuery{})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)

	// A service that takes the request and never answers.
	mute, err := b.nc.Subscribe(RequestSubject("mute", "*"), func(*nats.Msg) {})
	require.NoError(t, err)
	defer func() { _ = mute.Unsubscribe() }()
	require.NoError(t, b.nc.Flush())
	_, err = nodeOf(t, url, "alpha", "mute", time.Second).Send(ctx, wire.SendQuery{Address: "proj", Text: "hi"})
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
}

// A request that is not this build's, or from a name that is none, is a
// usage error, and nothing runs.
func TestABadRequestIsRefused(t *testing.T) {
	url := natstest.Start(t)
	far := &farNode{}
	serveNode(t, url, "beta", far)
	b := connect(t, url)
	for name, tc := range map[string]struct{ subject, data string }{
		"version":  {RequestSubject("beta", "alpha"), `{"v":9,"op":"list"}`},
		"op":       {RequestSubject("beta", "alpha"), `{"v":1,"op":"rm"}`},
		"durable":  {RequestSubject("beta", "alpha"), `{"v":1,"op":"send","send":` + mustJSON(t, wire.SendOrder{Durable: time.Hour}) + `}`},
		"bad name": {"peerctl.v1.req.beta.-x", `{"v":1,"op":"list"}`},
	} {
		m, err := b.nc.Request(tc.subject, []byte(tc.data), 10*time.Second)
		require.NoError(t, err, name)
		var a Answer
		require.NoError(t, json.Unmarshal(m.Data, &a), name)
		assert.Equal(t, wire.ExitUsage, a.Code, name)
	}
	assert.Empty(t, far.sent)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// watch --host nats:NODE follows the node's presence: its sessions first,
// then each change as its event, with its host and endpoints; the node's
// leaving ends the watch as host_unreachable; a node not on the bus is
// host_unreachable at once.
func TestWatchFollowsANodesPresence(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	p, err := connect(t, url).Join(ctx, member("beta", "o2"))
	require.NoError(t, err)
	a, b := session(301, "proj"), session(302, "api")
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{a}}))

	n := nodeOf(t, url, "alpha", "beta", 30*time.Second)
	got := make(chan wire.Event, 16)
	done := make(chan error, 1)
	go func() {
		done <- n.Watch(ctx, func(e wire.Event) bool { got <- e; return true }, func(string) {})
	}()
	next := func() wire.Event {
		t.Helper()
		select {
		case e := <-got:
			return e
		case err := <-done:
			t.Fatalf("the watch ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30 s")
		}
		return wire.Event{}
	}
	e := next()
	assert.Equal(t, "appeared", e.Event)
	assert.True(t, e.Initial)
	assert.Equal(t, "nats:beta", e.Host)
	assert.Equal(t, "nats:v1:beta:"+a.Endpoint, e.Endpoint)

	busy := a
	busy.Status = "busy"
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{busy, b}}))
	kinds := map[string]wire.Event{}
	for range 2 {
		e := next()
		kinds[e.Event] = e
	}
	assert.Equal(t, "idle", kinds["status"].PreviousStatus)
	assert.Equal(t, "api", kinds["appeared"].Name)
	assert.False(t, kinds["appeared"].Initial)

	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{b}}))
	e = next()
	assert.Equal(t, "gone", e.Event)
	assert.Equal(t, "proj", e.Name)

	require.NoError(t, p.Leave(ctx))
	select {
	case err := <-done:
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
		assert.Contains(t, r.Detail, "node beta left the fleet's bus")
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not end when the node left")
	}

	err = nodeOf(t, url, "alpha", "nobody", 30*time.Second).Watch(ctx, func(wire.Event) bool { return true }, nil)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Contains(t, r.Detail, "node nobody is not on the fleet's bus")
}

// Two services answering for one node (a twin that got past the name's
// check) share its requests: a send is delivered once, not by both.
func TestARequestReachesOneOfANodesServices(t *testing.T) {
	url := natstest.Start(t)
	s := session(301, "proj")
	one := &farNode{receipt: func(wire.SendQuery) (wire.Sent, error) { return receiptFor(s), nil }}
	two := &farNode{receipt: one.receipt}
	serveNode(t, url, "ubuntu", one)
	serveNode(t, url, "ubuntu", two)
	n := nodeOf(t, url, "alpha", "ubuntu", 30*time.Second)
	_, err := n.Send(context.Background(), wire.SendQuery{Address: s.Endpoint, Text: "once", Timeout: time.Minute})
	require.NoError(t, err)
	one.mu.Lock()
	two.mu.Lock()
	defer one.mu.Unlock()
	defer two.mu.Unlock()
	assert.Equal(t, 1, len(one.sent)+len(two.sent), "delivered by one service only")
}
