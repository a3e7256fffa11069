package opencode

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/domain"
)

// readKept reads a made-up /proc whose pid 101 (start 777) is f's server
// in work, keeping the server's client in kept, and returns its session.
func readKept(t *testing.T, f *fakeServer, kept *servers) domain.Session {
	t.Helper()
	work := t.TempDir()
	f.sessions = `[{"id":"` + sid + `","directory":"` + work + `"}]`
	p := newFakeProc(t)
	p.add(t, 101, work, []string{"opencode", "serve"}, portOf(t, f.addr()))
	r := NewRegistry(p.db(), Auth{}, "")
	r.procRoot, r.uid, r.serverPIDOf, r.kept = p.root, os.Getuid(), self, kept
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Records, 1)
	e := domain.Classify(snap.Records[0], domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
	require.True(t, e.Addressable, e.Unaddressable)
	s, err := domain.NewSession(e)
	require.NoError(t, err)
	return s
}

// A send resolves its target on a fresh read: the delivery takes the
// connection that read proved the server's (its event stream runs on
// it) and the post's, proved while the stream connects, is the only new
// one: two connections for the read and the send, not three.
func TestSendReusesTheReadsProvedConnection(t *testing.T) {
	f := newFake(t)
	kept := &servers{}
	target := readKept(t, f, kept)
	assert.EqualValues(t, 1, f.conns.Load(), "the read asks on one connection")
	pr := NewPrompt(Config{})
	pr.kept = kept
	rec, err := pr.Deliver(context.Background(), target, message(t, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome, rec.Detail)
	assert.Len(t, f.postBodies(), 1, "posted once")
	assert.EqualValues(t, 2, f.conns.Load(), "the read's connection carries the event stream, the post's is the only other")
	assert.Nil(t, kept.take(serverKey(101, "777", f.addr())), "taken by the send")
}

// A kept connection was proved one process's (pid and start) at one
// address: a send to another process at that address never takes it.
func TestAKeptConnectionServesOnlyItsProcess(t *testing.T) {
	f := newFake(t)
	kept := &servers{}
	readKept(t, f, kept)
	pr := NewPrompt(Config{})
	pr.kept = kept
	other := session(t, f.addr()) // this process, start 99
	rec, err := pr.Deliver(context.Background(), other, message(t, "hello"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome, rec.Detail)
	c := kept.take(serverKey(101, "777", f.addr()))
	require.NotNil(t, c, "pid 101's client stays kept")
	c.Close()
	assert.EqualValues(t, 3, f.conns.Load(), "the send dialled its own two")
}

// A warmed connection is proved as any other before a byte is written:
// to a listener that is not the process's, nothing is sent.
func TestAWarmedConnectionIsProvedFirst(t *testing.T) {
	f := newFake(t)
	c := NewClient(f.addr(), os.Getppid(), NewAuth("", "s3cret"), sockowner.Prover{})
	defer c.Close()
	c.Warm(context.Background())
	_, err := c.Health(context.Background())
	var m *sockowner.Mismatch
	require.ErrorAs(t, err, &m, "%v", err)
	assert.Contains(t, m.Error(), "pid "+strconv.Itoa(os.Getppid()))
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.auth, "no request reached the listener")
}

// A registry read keeps only the servers it found this time: one gone
// since the last read is closed and no longer kept.
func TestServersKeepTheLastReadOnly(t *testing.T) {
	s := &servers{}
	a, b := NewClient("127.0.0.1:1", 1, Auth{}, sockowner.Prover{}), NewClient("127.0.0.1:2", 2, Auth{}, sockowner.Prover{})
	s.replace(map[string]*Client{"a": a, "b": b})
	s.replace(map[string]*Client{"b": b})
	assert.Nil(t, s.take("a"))
	assert.Same(t, b, s.take("b"))
	assert.Nil(t, s.take("b"), "taken once")
}

// The courier (send --await-reply) takes the read's connection for its
// event stream as a send does, and hears the answer on it.
func TestCourierReusesTheReadsProvedConnection(t *testing.T) {
	f := newFake(t)
	kept := &servers{}
	target := readKept(t, f, kept)
	pr := NewPrompt(Config{})
	pr.kept = kept
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	k, err := pr.StartCourier(ctx)
	require.NoError(t, err)
	defer k.Close()
	rec, err := k.Send(ctx, target, message(t, "one"))
	require.NoError(t, err)
	require.Equal(t, "delivered", rec.Outcome, rec.Detail)
	select {
	case in := <-k.Inbound():
		assert.Equal(t, "pong: one", in.Text)
	case <-ctx.Done():
		t.Fatal("no reply")
	}
	assert.EqualValues(t, 2, f.conns.Load(), "the read's connection carries the event stream, the post's is the only other")
}

// eventStreams is how many times f's GET /event was opened.
func (f *fakeServer) eventStreams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.streams)
}

// The long-lived courier (peerctl serve's warm one) keeps each server's
// event stream open: a second send pays only its post, on the first
// post's connection, and its receipt comes on the stream already open.
func TestCourierKeepsTheStreamAcrossSends(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	k, err := NewPrompt(Config{}).StartCourier(ctx)
	require.NoError(t, err)
	defer k.Close()
	for _, text := range []string{"one", "two", "three"} {
		rec, err := k.Send(ctx, session(t, f.addr()), message(t, text))
		require.NoError(t, err)
		assert.Equal(t, "delivered", rec.Outcome, rec.Detail)
	}
	assert.Len(t, f.postBodies(), 3)
	assert.Equal(t, 1, f.eventStreams(), "one GET /event for three sends")
	assert.EqualValues(t, 2, f.conns.Load(), "the stream's connection and the posts' one")
}

// A server that ended the stream (it stopped, and was started again at
// its address) gets a new one at the next send; the ended one is
// forgotten.
func TestCourierReopensTheStreamAfterTheServerRestarts(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pk, err := NewPrompt(Config{}).StartCourier(ctx)
	require.NoError(t, err)
	defer pk.Close()
	k := pk.(*courier)
	_, err = k.Send(ctx, session(t, f.addr()), message(t, "one"))
	require.NoError(t, err)
	f.srv.CloseClientConnections()
	require.Eventually(t, func() bool { return k.Streams() == 0 }, 15*time.Second, 10*time.Millisecond, "the ended stream is forgotten")
	rec, err := k.Send(ctx, session(t, f.addr()), message(t, "two"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome, rec.Detail)
	assert.Equal(t, 2, f.eventStreams(), "opened again")
	assert.Equal(t, 1, k.Streams())
}

// A stream is one server process's (pid, start, address): a send to
// another process at that address (the server went away and another took
// its port) never posts on the old process's connections; the courier
// closes the old stream and opens the new process's.
func TestCourierStreamServesOnlyItsProcess(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pk, err := NewPrompt(Config{}).StartCourier(ctx)
	require.NoError(t, err)
	defer pk.Close()
	k := pk.(*courier)
	_, err = k.Send(ctx, sessionStarted(t, f.addr(), "99"), message(t, "one"))
	require.NoError(t, err)
	rec, err := k.Send(ctx, sessionStarted(t, f.addr(), "100"), message(t, "two"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome, rec.Detail)
	assert.Equal(t, 2, f.eventStreams(), "the new process's own stream")
	assert.EqualValues(t, 4, f.conns.Load(), "its own stream and post connections")
	require.Eventually(t, func() bool { return k.Streams() == 1 }, 15*time.Second, 10*time.Millisecond, "the old process's stream is closed")
}
