package natsbus

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// stallProxy forwards connections to a NATS server until stall is called;
// from then on it forwards nothing, as a server stopped (kill -STOP) is
// silent: connections stay open, nothing answers.
type stallProxy struct {
	url     string
	stalled chan struct{}
	stall   func()
}

func newStallProxy(t *testing.T, serverURL string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	p := &stallProxy{url: "nats://" + ln.Addr().String(), stalled: make(chan struct{})}
	var once sync.Once
	p.stall = func() { once.Do(func() { close(p.stalled) }) }
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			select {
			case <-p.stalled:
				<-done
				return
			default:
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", strings.TrimPrefix(serverURL, "nats://"))
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return p
}

// A watch over a bus that stops answering (its server stopped: no event,
// no error, the connection open) ends host_unreachable within its
// keepalive, saying the bus does not answer, not that the node left.
func TestWatchEndsWhenTheBusStopsAnswering(t *testing.T) {
	defer func(d time.Duration) { watchPing = d }(watchPing)
	watchPing = 200 * time.Millisecond
	url := natstest.Start(t)
	ctx := context.Background()
	p, err := connect(t, url).Join(ctx, member("beta", "o2"))
	require.NoError(t, err)
	require.NoError(t, p.Publish(ctx, wire.Listing{Sessions: []wire.Session{session(301, "proj")}}))

	proxy := newStallProxy(t, url)
	n := nodeOf(t, proxy.url, "alpha", "beta", 30*time.Second)
	got := make(chan wire.Event, 16)
	done := make(chan error, 1)
	go func() { done <- n.Watch(ctx, func(e wire.Event) bool { got <- e; return true }, nil) }()
	select {
	case e := <-got:
		require.Equal(t, "appeared", e.Event)
	case err := <-done:
		t.Fatalf("the watch ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	proxy.stall()
	select {
	case err := <-done:
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
		assert.Contains(t, r.Detail, "the fleet's bus does not answer")
		assert.NotContains(t, r.Detail, "left")
	case <-time.After(60 * time.Second): // the keepalive is 0.6 s here; the client's own ping, 2 min
		t.Fatal("the watch did not end when the bus stopped answering")
	}
}
