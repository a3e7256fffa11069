package natsbus

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// fleetServer runs a server with ServerConfig's users for nodes (their
// seeds in the returned folder) and JetStream on.
func fleetServer(t *testing.T, nodes ...string) (url, keys string) {
	t.Helper()
	url, keys = bareFleetServer(t, nodes...)
	_, _, err := connectOperator(t, url, keys).Setup(context.Background())
	require.NoError(t, err)
	return url, keys
}

// connectOperator connects with the operator's key (AdminKey) in keys.
func connectOperator(t *testing.T, url, keys string) *Bus {
	t.Helper()
	b, err := Connect(Settings{URLs: url, Creds: filepath.Join(keys, wire.AdminKeyFile), Operator: true, Name: "operator"}, false)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return b
}

// bareFleetServer is fleetServer before the operator's step: no stream.
func bareFleetServer(t *testing.T, nodes ...string) (url, keys string) {
	t.Helper()
	keys = t.TempDir()
	var users []NodeUser
	for _, n := range nodes {
		pub, made, err := NodeKey(keys, n)
		require.NoError(t, err)
		require.True(t, made)
		users = append(users, NodeUser{Node: n, PublicKey: pub})
	}
	admin, _, err := AdminKey(keys)
	require.NoError(t, err)
	conf, err := ServerConfig(admin, users)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fleet.conf")
	require.NoError(t, os.WriteFile(path, []byte("jetstream {}\n"+conf), 0o600))
	opts, err := server.ProcessConfigFile(path)
	require.NoError(t, err, conf)
	return natstest.StartWith(t, opts), keys
}

// violations connects as node and collects the servers' permission
// violations it is told of.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) saw(sub string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

func connectAs(t *testing.T, url, keys, node string) (*Bus, *violations) {
	t.Helper()
	b, err := Connect(Settings{URLs: url, Creds: filepath.Join(keys, node+".nk"), Node: node, Name: node}, false)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	v := &violations{}
	b.nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		v.mu.Lock()
		v.errs = append(v.errs, err.Error())
		v.mu.Unlock()
	})
	return b, v
}

// With each node's own credentials (ServerConfig), the fleet works — each
// node publishes its presence, reads everyone's, asks another node and is
// answered — and one node's credentials cannot read another's requests or
// replies, make a request as another, or write another's presence.
func TestOneNodesCredentialsCannotReadAnothersRequests(t *testing.T) {
	url, keys := fleetServer(t, "alpha", "beta.lan", "gamma")
	ctx := context.Background()

	// What each node does is allowed.
	alpha, alphaSaw := connectAs(t, url, keys, "alpha")
	beta, _ := connectAs(t, url, keys, "beta.lan")
	gamma, _ := connectAs(t, url, keys, "gamma")
	pa, err := alpha.Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	pb, err := beta.Join(ctx, member("beta.lan", "o2"))
	require.NoError(t, err)
	require.NoError(t, pb.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(201, "api")}}))
	l, err := alpha.Fleet(ctx)
	require.NoError(t, err)
	assert.Len(t, l.Sessions, 1)
	assert.Equal(t, "nats:beta.lan", l.Sessions[0].Host)
	s := session(201, "api")
	far := &farNode{listing: wire.Listing{Sessions: []wire.Session{s}}, receipt: func(wire.SendQuery) (wire.Sent, error) { return receiptFor(s), nil }}
	stop, err := beta.Answer(ctx, "beta.lan", "v0", far.from, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stop()
	n, err := NewNode(Settings{URLs: url, Creds: filepath.Join(keys, "gamma.nk"), Node: "gamma"}, mustNodeDest(t, "beta.lan"), 30*time.Second)
	require.NoError(t, err)
	sent, err := n.Send(ctx, wire.SendQuery{Address: s.Endpoint, Text: "secret plan"})
	require.NoError(t, err)
	assert.Equal(t, "nats:beta.lan", sent.Receipt.Host)

	// alpha listens on beta's requests and on beta's and gamma's inboxes:
	// refused, and it hears nothing while gamma asks beta again.
	var heard []string
	var mu sync.Mutex
	for _, subj := range []string{RequestSubject("beta.lan", "*"), "peerctl.v1.req.>", InboxPrefix("beta.lan") + ".>", InboxPrefix("gamma") + ".>", ">"} {
		_, err := alpha.nc.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			heard = append(heard, m.Subject)
			mu.Unlock()
		})
		require.NoError(t, err)
	}
	require.NoError(t, alpha.nc.Flush())
	_, err = n.Send(ctx, wire.SendQuery{Address: s.Endpoint, Text: "secret plan"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return alphaSaw.saw(`Subscription to "peerctl.v1.req.beta~lan.*"`) }, 30*time.Second, 10*time.Millisecond)
	for _, subj := range []string{`"peerctl.v1.req.>"`, `"_INBOX.peerctl.beta~lan.>"`, `"_INBOX.peerctl.gamma.>"`, `">"`} {
		assert.True(t, alphaSaw.saw("Subscription to "+subj), subj)
	}
	mu.Lock()
	assert.Empty(t, heard, "alpha heard nothing of gamma's request or beta's answer")
	mu.Unlock()

	// alpha asks beta as gamma, and writes beta's presence: refused; beta
	// got no request from "gamma" but gamma's own two.
	require.NoError(t, alpha.nc.Publish(RequestSubject("beta.lan", "gamma"), []byte(`{"v":1,"op":"list"}`)))
	_, err = alpha.js.Publish(ctx, "$KV."+PresenceBucket+".beta.lan", []byte("{}"))
	assert.Error(t, err)
	require.NoError(t, alpha.nc.Flush())
	require.Eventually(t, func() bool { return alphaSaw.saw(`Publish to "peerctl.v1.req.beta~lan.gamma"`) }, 30*time.Second, 10*time.Millisecond)
	assert.True(t, alphaSaw.saw(`Publish to "$KV.peerctl_presence.beta.lan"`))
	far.mu.Lock()
	assert.Equal(t, []string{"gamma", "gamma"}, far.senders)
	far.mu.Unlock()
	l, err = gamma.Fleet(ctx)
	require.NoError(t, err)
	assert.Equal(t, "api", l.Sessions[0].Name, "beta's presence is beta's")
	_ = pa
}

func mustNodeDest(t *testing.T, node string) domain.Dest {
	t.Helper()
	d, err := domain.NodeDest(node)
	require.NoError(t, err)
	return d
}

// A node's key is made once and kept; a seed that is not a user's, or a
// bad name, is refused; the configuration names each node once.
func TestNodeKeysAndTheServerConfig(t *testing.T) {
	dir := t.TempDir()
	pub, made, err := NodeKey(dir, "alpha")
	require.NoError(t, err)
	assert.True(t, made)
	fi, err := os.Stat(filepath.Join(dir, "alpha.nk"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, made, err := NodeKey(dir, "alpha")
	require.NoError(t, err)
	assert.False(t, made)
	assert.Equal(t, pub, again)
	_, _, err = NodeKey(dir, "a b")
	assert.ErrorIs(t, err, domain.ErrBadNode)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.nk"), []byte("hello\n"), 0o600))
	_, _, err = NodeKey(dir, "junk")
	assert.ErrorContains(t, err, "not an nkey seed")

	_, err = ServerConfig(pub, []NodeUser{{"alpha", pub}, {"alpha", pub}})
	assert.ErrorContains(t, err, "named twice")
	_, err = ServerConfig(pub, []NodeUser{{"alpha", "nope"}})
	assert.Error(t, err)
	conf, err := ServerConfig(pub, []NodeUser{{"alpha", pub}})
	require.NoError(t, err)
	assert.Contains(t, conf, "nkey: "+pub)
	assert.Contains(t, conf, `"peerctl.v1.req.alpha.*"`)
	assert.False(t, errors.Is(err, domain.ErrBadNode))
	pubs, _ := Permissions("alpha")
	for _, p := range pubs {
		for _, op := range []string{"STREAM.CREATE", "STREAM.UPDATE", "STREAM.DELETE", "STREAM.PURGE", "STREAM.MSG.DELETE", "$JS.API.>"} {
			assert.NotContains(t, p, op, "a node's credentials change no stream")
		}
	}
}
