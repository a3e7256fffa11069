package natsbus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

func TestMain(m *testing.M) {
	// The nodes here publish Claude Code's sessions: a stand-in of its
	// spec (the adapter's own is another harness's package).
	domain.RegisterZeroHarness(domain.HarnessSpec{Word: "claude-code", Title: "Claude Code", Prefix: "cc-peer:v1:", Pins: "name",
		Key: func(r domain.Record) string { return r.Name }, Unaddressable: func(domain.Record) string { return "" }})
	os.Exit(m.Run())
}

// session is a live Claude Code session of a node, as list --json gives it.
func session(pid int, name string) wire.Session {
	return wire.Session{Harness: "claude-code", SessionID: fmt.Sprintf("0000%04d-1111-2222-3333-444455556666", pid), PID: pid, Name: name,
		Status: "idle", Verdict: "live", Addressable: true, StartedAt: "2026-12-06T10:00:00Z",
		Endpoint: fmt.Sprintf("cc-peer:v1:%d:%s:/run/cc/%d.sock", pid, name, pid), SocketPath: fmt.Sprintf("/run/cc/%d.sock", pid)}
}

func connect(t *testing.T, url string) *Bus {
	t.Helper()
	b, err := Connect(Settings{URLs: url, Name: t.Name()}, false)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return b
}

func member(node, owner string) Member {
	return Member{Node: node, Owner: owner, Host: "box-" + owner, PID: 4242, Version: "v0.test"}
}

func TestTwoNodesListedWithTheirHost(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	a, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	b, err := connect(t, url).Join(ctx, member("beta", "o2"))
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	require.NoError(t, b.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(201, "api"), session(202, "web")}, Partial: true,
		Notes: []string{"warning: qwen-code: registry not read"}}))

	l, err := connect(t, url).Fleet(ctx)
	require.NoError(t, err)
	require.Len(t, l.Sessions, 3)
	assert.Equal(t, "nats:alpha", l.Sessions[0].Host)
	assert.Equal(t, "nats:v1:alpha:cc-peer:v1:101:proj:/run/cc/101.sock", l.Sessions[0].Endpoint)
	assert.Equal(t, []string{"nats:beta", "nats:beta"}, []string{l.Sessions[1].Host, l.Sessions[2].Host})
	assert.Equal(t, "web", l.Sessions[2].Name)
	assert.True(t, l.Partial, "a node's partial listing makes the fleet's partial")
	assert.Equal(t, []string{"node beta: warning: qwen-code: registry not read"}, l.Notes)
}

func TestNoBucketIsAnEmptyFleet(t *testing.T) {
	l, err := connect(t, natstest.Start(t)).Fleet(context.Background())
	require.NoError(t, err)
	assert.Empty(t, l.Sessions)
	assert.Contains(t, l.Notes[0], "no node has joined")
}

func TestADuplicateNodeNameIsRefused(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	first, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, first.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))

	_, err = connect(t, url).Join(ctx, member("alpha", "o2"))
	require.ErrorIs(t, err, ErrNodeTaken)
	assert.Contains(t, err.Error(), "node alpha is held by a live peerctl serve (pid 4242 on host box-o1, peerctl v0.test")
	assert.Contains(t, err.Error(), "another --node")

	l, err := connect(t, url).Fleet(ctx)
	require.NoError(t, err)
	require.Len(t, l.Sessions, 1, "the refused one changed nothing")
	assert.Equal(t, "proj", l.Sessions[0].Name)

	// A service of the same place (its state folder, which one service
	// holds at a time: the first one died) takes its name back at once.
	again, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, again.Publish(ctx, wire.Listing{}))
}

func TestLeaveDropsTheNodeAtOnce(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	p, err := connect(t, url).Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	require.NoError(t, p.Leave(ctx))
	l, err := connect(t, url).Fleet(ctx)
	require.NoError(t, err)
	assert.Empty(t, l.Sessions)
	assert.Empty(t, l.Notes)
	// The name is free for anyone now.
	_, err = connect(t, url).Join(ctx, member("alpha", "o2"))
	require.NoError(t, err)
}

// TestPresenceRefreshedStaysAndExpiresWhenNot: a node refreshed more
// often than the TTL stays listed; one no longer refreshed (its service
// killed: no Leave) drops out once the TTL has passed.
func TestPresenceRefreshedStaysAndExpiresWhenNot(t *testing.T) {
	defer func(d time.Duration) { bucketTTL = d }(bucketTTL)
	bucketTTL = time.Second
	url := natstest.Start(t)
	ctx := context.Background()
	kept, err := connect(t, url).Join(ctx, member("kept", "o1"))
	require.NoError(t, err)
	_, err = connect(t, url).Join(ctx, member("dead", "o2"))
	require.NoError(t, err)
	reader := connect(t, url)
	sessions := wire.Listing{Sessions: []wire.Session{session(101, "proj")}}
	deadline := time.Now().Add(30 * time.Second)
	for slices.Contains(keys(t, reader), "dead") { // bounded: the TTL is 1 s
		require.True(t, time.Now().Before(deadline), "the dead node's presence did not expire")
		require.NoError(t, kept.Publish(ctx, sessions))
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, kept.Publish(ctx, sessions))
	l, err := reader.Fleet(ctx)
	require.NoError(t, err)
	require.Len(t, l.Sessions, 1)
	assert.Equal(t, "nats:kept", l.Sessions[0].Host)
}

// keys are the presence bucket's live keys.
func keys(t *testing.T, b *Bus) []string {
	kv, err := b.presence(context.Background(), false)
	require.NoError(t, err)
	ks, err := kv.Keys(context.Background())
	if err != nil && strings.Contains(err.Error(), "no keys found") {
		return nil
	}
	require.NoError(t, err)
	return ks
}

func TestAServiceCutOffLongerThanTheTTLClaimsItsNameAgain(t *testing.T) {
	defer func(d time.Duration) { bucketTTL = d }(bucketTTL)
	bucketTTL = time.Second
	url := natstest.Start(t)
	ctx := context.Background()
	b := connect(t, url)
	p, err := b.Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for len(keys(t, b)) > 0 {
		require.True(t, time.Now().Before(deadline), "never expired")
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	l, err := b.Fleet(ctx)
	require.NoError(t, err)
	require.Len(t, l.Sessions, 1)
}

// TestHostilePresenceIsRefused: whatever a key holds, the fleet lists
// only what this build's presence document allows, and names the node or
// session left out; the other nodes are listed.
func TestHostilePresenceIsRefused(t *testing.T) {
	good := func(mod func(*Doc)) []byte {
		d := Doc{V: DocVersion, Node: "evil", Owner: "x", Host: "h", PID: 1, Version: "v", UpdatedAt: "2026-12-06T10:00:00Z",
			Notes: []string{}, Sessions: []wire.Session{session(7, "s")}}
		mod(&d)
		b, err := json.Marshal(d)
		require.NoError(t, err)
		return b
	}
	withSession := func(mod func(*wire.Session)) []byte {
		return good(func(d *Doc) { mod(&d.Sessions[0]) })
	}
	cases := []struct {
		name, key string
		value     []byte
		why       string // the warning's words
	}{
		{"not JSON", "evil", []byte("\x1b[2J{"), "not this build's document"},
		{"an unknown key", "evil", []byte(strings.Replace(string(good(func(*Doc) {})), `"node"`, `"exec":"rm","node"`, 1)), "not this build's document"},
		{"a key missing", "evil", []byte(strings.Replace(string(good(func(*Doc) {})), `"owner":"x",`, ``, 1)), "not this build's document"},
		{"a session's key missing", "evil", []byte(strings.Replace(string(good(func(*Doc) {})), `"verdict":"live",`, ``, 1)), "a session"},
		{"another version", "evil", good(func(d *Doc) { d.V = DocVersion + 1 }), "version " + strconv.Itoa(DocVersion+1)},
		{"another node's name", "evil", good(func(d *Doc) { d.Node = "alpha" }), `names another node, "alpha"`},
		{"a key that is no node name", "a=b", good(func(d *Doc) { d.Node = "a=b" }), "bad node name"},
		{"a session of a host", "evil", withSession(func(s *wire.Session) { s.Host = "far" }), "left out: it names host"},
		{"an ssh endpoint", "evil", withSession(func(s *wire.Session) { s.Endpoint = "ssh:v1:far:cc-peer:v1:7:s:/x" }), "another machine's"},
		{"a nats endpoint", "evil", withSession(func(s *wire.Session) { s.Endpoint = "nats:v1:alpha:cc-peer:v1:7:s:/x" }), "another machine's"},
		{"an endpoint that is none", "evil", withSession(func(s *wire.Session) { s.Endpoint = "cc-peer:v1:x" }), "its endpoint is none"},
		{"an unknown harness", "evil", withSession(func(s *wire.Session) { s.Harness = "rogue" }), "its endpoint is a claude-code one"},
		{"a session not live", "evil", withSession(func(s *wire.Session) { s.Verdict = "stale" }), "not live"},
		{"a harness escaped once", "evil", withSession(func(s *wire.Session) { s.Harness = "\x1b]0;pwn\a" }), `its harness "\x1b]0;pwn\a"`},
		{"a pid of 0", "evil", withSession(func(s *wire.Session) { s.PID = 0 }), "its pid is 0"},
		{"a pid below 0", "evil", withSession(func(s *wire.Session) { s.PID = -1 }), "its pid is -1"},
		{"a status of no word", "evil", withSession(func(s *wire.Session) { s.Status = "sleepy" }), `its status is "sleepy"`},
		{"a session id of controls", "evil", withSession(func(s *wire.Session) { s.SessionID = "id\x1b[2J" }), "not printable"},
		{"a session id too long", "evil", withSession(func(s *wire.Session) { s.SessionID = strings.Repeat("a", 201) }), "over 200"},
		{"a startedAt of no time", "evil", withSession(func(s *wire.Session) { s.StartedAt = "yesterday" }), "not RFC 3339"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := natstest.Start(t)
			ctx := context.Background()
			honest, err := connect(t, url).Join(ctx, member("alpha", "o1"))
			require.NoError(t, err)
			require.NoError(t, honest.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
			b := connect(t, url)
			kv, err := b.presence(ctx, false)
			require.NoError(t, err)
			_, err = kv.Put(ctx, tc.key, tc.value)
			require.NoError(t, err)

			l, err := b.Fleet(ctx)
			require.NoError(t, err)
			require.Len(t, l.Sessions, 1, "only the honest node's session")
			assert.Equal(t, "nats:alpha", l.Sessions[0].Host)
			require.Len(t, l.Notes, 1)
			assert.Contains(t, l.Notes[0], tc.why)
			assert.Truef(t, strings.HasPrefix(l.Notes[0], "warning: node "+tc.key) || strings.HasPrefix(l.Notes[0], "node evil: warning: session"), "%q", l.Notes[0])
			assert.NotContains(t, l.Notes[0], "\x1b", "escaped")
		})
	}
}

func TestReadDocRefusesADocumentOverTheBound(t *testing.T) {
	_, err := ReadDoc("alpha", make([]byte, MaxDocBytes+1))
	assert.ErrorContains(t, err, "over")
}

func TestPublishKeepsWhatFitsTheBound(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	p, err := connect(t, url).Join(ctx, member("big", "o1"))
	require.NoError(t, err)
	var many []wire.Session
	for i := range 4000 {
		s := session(1000+i, "n")
		s.Cwd = strings.Repeat("d", 300)
		many = append(many, s)
	}
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: many}))
	l, err := connect(t, url).Fleet(ctx)
	require.NoError(t, err)
	assert.True(t, l.Partial)
	assert.Less(t, len(l.Sessions), 4000)
	assert.NotEmpty(t, l.Sessions)
	assert.Contains(t, strings.Join(l.Notes, "\n"), "presence holds")
}

func TestSplitURLs(t *testing.T) {
	got, err := SplitURLs("nats://a:4222, tls://b:4222,c:4222")
	require.NoError(t, err)
	assert.Equal(t, []string{"nats://a:4222", "tls://b:4222", "c:4222"}, got)
	for _, bad := range []string{"", "nats://a,", "http://a:80", "nats://", "nats://:", "nats://127.0.0.1:99999", "nats://127.0.0.1:0",
		"nats://127.0.0.1:", "nats://[::1", "nats://a\x1b:4222", "b:x", "nats://u:hunter2@[::1"} {
		_, err := SplitURLs(bad)
		if assert.Error(t, err, bad) {
			assert.NotContains(t, err.Error(), "hunter2")
		}
	}
	got, err = SplitURLs("nats://a,tls://[::1]:4222")
	require.NoError(t, err, "no port is the scheme's default")
	assert.Len(t, got, 2)
}

func TestCheckCredsRefusesWhatIsNoCredentials(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("SUsecretbutbroken\n"), 0o600))
	for _, bad := range []string{filepath.Join(dir, "missing"), dir, garbage} {
		err := CheckCreds(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), bad)
			assert.NotContains(t, err.Error(), "secretbutbroken")
		}
	}
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	nk := filepath.Join(dir, "a.nk")
	require.NoError(t, os.WriteFile(nk, append(seed, '\n'), 0o600))
	assert.NoError(t, CheckCreds(nk))
	creds := filepath.Join(dir, "a.creds")
	require.NoError(t, os.WriteFile(creds, fmt.Appendf(nil, "-----BEGIN NATS USER JWT-----\neyJ0.eyJ1.c2ln\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n", seed), 0o600))
	assert.NoError(t, CheckCreds(creds))
}

func TestConnectToNoServerSaysWhere(t *testing.T) {
	_, err := Connect(Settings{URLs: "nats://127.0.0.1:1", Timeout: time.Second}, false)
	require.ErrorIs(t, err, ErrNoServers)
	assert.Contains(t, err.Error(), "nats://127.0.0.1:1")
}

func TestConnectToNoServerHidesThePassword(t *testing.T) {
	_, err := Connect(Settings{URLs: "nats://user:hunter2@127.0.0.1:1", Timeout: time.Second}, false)
	require.ErrorIs(t, err, ErrNoServers)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "nats://user:xxxxx@127.0.0.1:1")
}

// A fleet whose presence is over the bound keeps the nodes most recently
// updated (a node refreshed last is live), the listing partial: the
// oldest is left out, whatever its name.
func TestFleetOverTheBoundKeepsTheNewestNodes(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	bus := connect(t, url)
	var sizes []int
	for _, node := range []string{"zeta", "alpha", "mid"} {
		p, err := bus.Join(ctx, member(node, "o-"+node))
		require.NoError(t, err)
		require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	}
	p, err := bus.Join(ctx, member("zeta", "o-zeta")) // zeta refreshed last: alpha is now the oldest
	require.NoError(t, err)
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	e, err := bus.presence(ctx, false)
	require.NoError(t, err)
	for _, node := range []string{"zeta", "alpha", "mid"} { // as they are now (updatedAt's length varies)
		v, err := e.Get(ctx, node)
		require.NoError(t, err)
		sizes = append(sizes, len(v.Value()))
	}

	defer func(n int) { maxFleetBytes = n }(maxFleetBytes)
	maxFleetBytes = sizes[0] + sizes[1] + sizes[2] - 1
	l, err := bus.Fleet(ctx)
	require.NoError(t, err)
	var hosts []string
	for _, s := range l.Sessions {
		hosts = append(hosts, s.Host)
	}
	assert.Equal(t, []string{"nats:mid", "nats:zeta"}, hosts)
	assert.True(t, l.Partial)
	assert.Contains(t, strings.Join(l.Notes, "\n"), "1 nodes left out")
}

// Over MaxNodes, the nodes refreshed last (live) are kept, not those
// that came first, and the listing is partial.
func TestFleetOverTheNodeCapKeepsTheNewestNodes(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	bus := connect(t, url)
	for _, node := range []string{"zeta", "alpha", "mid", "zeta"} { // zeta again: alpha is the oldest
		p, err := bus.Join(ctx, member(node, "o-"+node))
		require.NoError(t, err)
		require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	}
	defer func(n int) { maxNodes = n }(maxNodes)
	maxNodes = 2
	l, err := bus.Fleet(ctx)
	require.NoError(t, err)
	var hosts []string
	for _, s := range l.Sessions {
		hosts = append(hosts, s.Host)
	}
	assert.Equal(t, []string{"nats:mid", "nats:zeta"}, hosts)
	assert.True(t, l.Partial, "a listing that leaves nodes out is partial (exit 1)")
	assert.Contains(t, strings.Join(l.Notes, "\n"), "1 nodes left out")
}

// A presence bucket lost (the servers' storage wiped, the bucket deleted)
// is made again by the next publish, which claims the node's key again:
// the fleet comes back without restarting its services.
func TestALostBucketIsMadeAgain(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	b := connect(t, url)
	p, err := b.Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, b.js.DeleteKeyValue(ctx, PresenceBucket))
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(101, "proj")}}))
	l, err := connect(t, url).Fleet(ctx)
	require.NoError(t, err)
	require.Len(t, l.Sessions, 1)
	assert.Equal(t, "nats:alpha", l.Sessions[0].Host)
	require.NoError(t, p.Publish(ctx, wire.Listing{}), "the next refresh is a compare-and-set on the new key")
	_, err = connect(t, url).Join(ctx, member("alpha", "o2"))
	require.ErrorIs(t, err, ErrNodeTaken, "the key claimed again is the node's")
}
