// Package socktest provides a Unix listener that stands in for a Claude Code
// session's inbox socket in tests: it accepts connections and records what
// each one sent until it half-closed.
package socktest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// maxFrame bounds what one connection may send to the listener (4 MiB).
const maxFrame = 4 << 20

// Listener records connections to a Unix socket. Build it with Listen.
type Listener struct {
	ln   *net.UnixListener
	hold chan struct{} // non-nil: keep every connection open until cleanup

	once sync.Once
	mu   sync.Mutex
	// frames are the connections' frames in the order they were
	// accepted (which a sender that connects after its last connection
	// ended keeps); done marks the finished ones.
	frames [][]byte
	done   []bool
	conns  int
	wg     sync.WaitGroup
}

// Listen listens on path until the test ends. A real session closes the
// connection once it has read the line; with hold set the listener instead
// keeps every connection open until the test ends (a session that never
// closes).
func Listen(t testing.TB, path string, hold bool) *Listener {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	l := &Listener{ln: ln}
	if hold {
		l.hold = make(chan struct{})
	}
	l.wg.Add(1)
	go l.serve()
	t.Cleanup(l.Close)
	return l
}

func (l *Listener) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.conns++
		slot := len(l.frames)
		l.frames, l.done = append(l.frames, nil), append(l.done, false)
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			b, _ := io.ReadAll(io.LimitReader(c, maxFrame))
			l.mu.Lock()
			l.frames[slot], l.done[slot] = b, true
			l.mu.Unlock()
			if l.hold != nil {
				<-l.hold
			}
		}()
	}
}

// Close stops listening (removing the socket file), releases held
// connections and waits for every connection to end. It is called at the
// end of the test and may be called earlier.
func (l *Listener) Close() {
	l.once.Do(func() {
		if l.hold != nil {
			close(l.hold)
		}
		_ = l.ln.Close()
		l.wg.Wait()
	})
}

// Frames returns what each finished connection sent, in the order the
// connections were accepted (not of finishing: two readers finish in any
// order on a loaded machine).
func (l *Listener) Frames() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for i, f := range l.frames {
		if l.done[i] {
			out = append(out, f)
		}
	}
	return out
}

// Conns counts accepted connections.
func (l *Listener) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns
}

// Wait waits (at most 5 s) until n connections have finished sending and
// returns every frame so far.
func (l *Listener) Wait(n int) [][]byte {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := l.Frames()
		if len(f) >= n || time.Now().After(deadline) {
			return f
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Dead leaves a socket file at path with no listener behind it: a connect
// is refused, as after a session was SIGKILLed.
func Dead(t testing.TB, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	ln.SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
}
