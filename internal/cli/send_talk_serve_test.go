package cli

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports/wire"
)

// lockedBuffer is a strings.Builder that a test reads while a client
// writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A durable send that waits, through the service: the client asks for the
// service's talk, prints the receipt (with its outbox message) and the
// wait's line as soon as the service tells of the hand-over, before its
// final answer, and prints the receipt once. A test of order: the fake
// service answers only after the receipt was read.
func TestDurableSendThroughTheServiceTalksAtTheHandOver(t *testing.T) {
	var out, errOut lockedBuffer
	c := newFactory(strings.NewReader(""), &out, &errOut, func(string) string { return "" })
	receipt := wire.Receipt{OK: true, Outcome: "queued", Name: "proj-89", SessionID: "26df9a5b", PID: 4652, Transport: "courier", TransportMs: 712}
	read := make(chan struct{})
	path := filepath.Join(t.TempDir(), "s.sock")
	asked := make(chan serve.Request, 1)
	answerOnce(t, path, func(conn *net.UnixConn, req serve.Request, ok bool) {
		asked <- req
		_ = serve.WriteLine(conn, serve.Answer{Stored: &serve.Ref{ID: 3, State: "delivering"}})
		_ = serve.WriteLine(conn, serve.Answer{Talk: &serve.Talk{Handed: &serve.Handed{Sent: wire.Sent{Receipt: receipt}, Target: []byte("proj-89"),
			Until: time.Now().Add(10 * time.Minute), Confirming: true}}})
		_ = serve.WriteLine(conn, serve.Answer{Talk: &serve.Talk{Confirmation: []string{"peerctl: confirmed: its transcript shows the text in the session's queue (seen in 120ms)"}}})
		<-read
		end := receipt
		end.Wait = &wire.Wait{End: "exited", Status: "gone", Note: "the session ended"}
		_ = serve.WriteLine(conn, serve.Answer{Done: true, Sent: &wire.Sent{Receipt: end}, Ref: &serve.Ref{ID: 3, State: "delivered"}})
	})
	conn, err := dialUnix(path)
	require.NoError(t, err)
	talk := talkWhileWaiting(c.io, false, 10*time.Minute, 0)
	done := make(chan error, 1)
	go func() {
		a, err := c.serveClient().ask(talk.context(context.Background()), conn, serve.Request{Op: "send", Send: &wire.SendOrder{}, Talk: talk != nil})
		if err == nil {
			err = c.serveClient().answered(a, false, false, talk)
		}
		done <- err
	}()
	assert.True(t, (<-asked).Talk, "the client asks for the talk")
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "confirmed:") }, time.Minute, 5*time.Millisecond,
		"the receipt and the wait's line before the answer: stdout %q, stderr %q", out.String(), errOut.String())
	assert.Equal(t, `handed over: "proj-89" (session 26df9a5b, pid 4652, outbox message 3) by courier in 712ms`+"\n", out.String())
	assert.Contains(t, errOut.String(), "peerctl: waiting up to 10m0s")
	close(read)
	require.NoError(t, <-done)
	assert.Equal(t, 1, strings.Count(out.String(), `handed over: "proj-89"`), "the receipt once: %s", out.String())
	assert.Contains(t, out.String(), "wait: exited")
	assert.Equal(t, 1, strings.Count(errOut.String(), "confirmed:"), "the confirmation once: %s", errOut.String())
}
