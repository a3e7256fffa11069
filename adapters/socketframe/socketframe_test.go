package socketframe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/peerctl/peerctl/adapters/fsregistry" // Claude Code's spec: the targets are its sessions
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
	"github.com/peerctl/peerctl/test/socktest"
)

// shortDir is a fresh folder with a short path: a Unix socket address holds
// 107 bytes, more than some t.TempDir() paths leave room for.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sf")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func session(t testing.TB, socket string) domain.Session {
	return transporttest.Session(t, domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: socket})
}

func msg(t testing.TB, text string) domain.Message {
	t.Helper()
	m, err := domain.NewMessage(text)
	require.NoError(t, err)
	return m
}

// wantFrame is the documented post, written out by hand: exactly these keys
// in this order, the text as a JSON string, one trailing newline.
func wantFrame(t testing.TB, text string) []byte {
	var s bytes.Buffer
	enc := json.NewEncoder(&s)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(text))
	return []byte(`{"type":"user","message":{"role":"user","content":` + strings.TrimSuffix(s.String(), "\n") + "}}\n")
}

// decodeFrame checks one frame's shape strictly and returns its content.
func decodeFrame(t testing.TB, b []byte) string {
	t.Helper()
	require.True(t, bytes.HasSuffix(b, []byte("\n")), "frame does not end in a newline: %q", b)
	require.Equal(t, 1, bytes.Count(b, []byte("\n")), "more than one line was sent: %q", b)
	var f struct {
		Type    string `json:"type"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&f))
	require.Equal(t, "user", f.Type)
	require.Equal(t, "user", f.Message.Role)
	return f.Message.Content
}

func TestSocketTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, c transporttest.Case) transporttest.Setup {
		path := filepath.Join(shortDir(t), "s.sock")
		var l *socktest.Listener
		switch c.Far {
		case transporttest.Accept:
			l = socktest.Listen(t, path, false)
		case transporttest.Hang:
			l = socktest.Listen(t, path, true)
		case transporttest.Fail:
			socktest.Dead(t, path)
		}
		return transporttest.Setup{Transport: socketframe.New(c.Timeout), Target: session(t, path),
			Received: func() []string {
				if l == nil {
					return nil
				}
				var out []string
				for _, f := range l.Wait(0) {
					out = append(out, decodeFrame(t, f))
				}
				return out
			}}
	})
}

// TestSocketFrameBytes: the listener receives exactly the documented line
// and nothing else (no auth line), for every tricky text.
func TestSocketFrameBytes(t *testing.T) {
	for name, text := range transporttest.TrickyTexts() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(shortDir(t), "s.sock")
			l := socktest.Listen(t, path, false)
			rcpt, err := socketframe.New(10*time.Second).Deliver(context.Background(), session(t, path), msg(t, text))
			require.NoError(t, err)
			assert.Equal(t, "posted", rcpt.Outcome)
			frames := l.Wait(1)
			require.Len(t, frames, 1)
			assert.Equal(t, string(wantFrame(t, text)), string(frames[0]))
			assert.Equal(t, text, decodeFrame(t, frames[0]))
			assert.NotContains(t, string(frames[0]), `"auth"`+`,"token"`)
			assert.Equal(t, wantFrame(t, text), socketframe.Frame(text))
		})
	}
}

func TestSocketFailures(t *testing.T) {
	dir := shortDir(t)
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, []byte("x"), 0o600))
	refused := filepath.Join(dir, "refused.sock")
	socktest.Dead(t, refused)
	// A link to a live socket is refused all the same (Lstat, on purpose).
	live := filepath.Join(dir, "live.sock")
	liveL := socktest.Listen(t, live, false)
	link := filepath.Join(dir, "link.sock")
	require.NoError(t, os.Symlink(live, link))
	tests := []struct {
		name, path string
		want       string
		is         error
	}{
		{"absent", filepath.Join(dir, "absent.sock"), "does not exist", syscall.ENOENT},
		{"regular file", regular, "is not a socket", nil},
		{"directory", dir, "is not a socket", nil},
		{"no listener", refused, "connect to", syscall.ECONNREFUSED},
		{"symlink to a live socket", link, "is not a socket", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := socketframe.New(5*time.Second).Deliver(context.Background(), session(t, tt.path), msg(t, "hi"))
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "not a refusal: %v", err)
			assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
			assert.Contains(t, r.Detail, tt.want)
			assert.Contains(t, r.Detail, tt.path)
			if tt.is != nil {
				assert.True(t, errors.Is(err, tt.is), "%v is not %v", err, tt.is)
			}
			if tt.is == syscall.ECONNREFUSED {
				return // only connecting finds that out; a plan does not connect
			}
			// A dry run refuses exactly as the send does.
			_, perr := socketframe.New(5*time.Second).Plan(session(t, tt.path), msg(t, "hi"))
			pr, ok := domain.AsRefusal(perr)
			require.True(t, ok, "plan: not a refusal: %v", perr)
			assert.Equal(t, r.Reason, pr.Reason)
			assert.Equal(t, r.Detail, pr.Detail)
		})
	}
	assert.Zero(t, liveL.Conns(), "the link's target got a connection")
}

// TestSocketReply: Claude Code's socket never writes back; a listener that
// does still makes the post "posted", but the detail says so.
func TestSocketReply(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reply []byte
		want  string // in the detail; "" means no mention of a reply
	}{
		{"silent", nil, ""},
		{"one line", []byte("{\"ok\":true}\n"), "the socket replied 12 bytes, which Claude Code 2.1.328 never does"},
		{"one byte", []byte("x"), "the socket replied 1 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(shortDir(t), "s.sock")
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			require.NoError(t, err)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := ln.AcceptUnix()
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = c.Write(tt.reply)
				_, _ = io.Copy(io.Discard, c) // to the half-close
			}()
			t.Cleanup(func() { ln.Close(); wg.Wait() })
			rc, err := socketframe.New(5*time.Second).Deliver(context.Background(), session(t, path), msg(t, "hi"))
			require.NoError(t, err)
			assert.Equal(t, "posted", rc.Outcome)
			if tt.want == "" {
				assert.NotContains(t, rc.Detail, "replied")
			} else {
				assert.Contains(t, rc.Detail, tt.want)
			}
		})
	}
}

// TestSocketNeverClosed: a session that reads the frame but never closes
// the connection ends the post once the bound passes, with the outcome
// unknown: the frame was written, so the text may have arrived.
func TestSocketNeverClosed(t *testing.T) {
	path := filepath.Join(shortDir(t), "s.sock")
	l := socktest.Listen(t, path, true)
	const timeout = 500 * time.Millisecond
	start := time.Now()
	_, err := socketframe.New(timeout).Deliver(context.Background(), session(t, path), msg(t, "hi"))
	elapsed := time.Since(start)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "not a refusal: %v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	assert.Contains(t, r.Detail, "did not close the connection")
	assert.GreaterOrEqual(t, elapsed, timeout, "gave up before the bound")
	assert.LessOrEqual(t, elapsed, timeout+3*time.Second)
	assert.Len(t, l.Wait(1), 1, "the frame was written")
}

// TestSocketChattyPeerNeverClosed: a peer that talks but never closes is
// not a peer that closed, however much it says.
func TestSocketChattyPeerNeverClosed(t *testing.T) {
	path := filepath.Join(shortDir(t), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		junk := bytes.Repeat([]byte("x"), 1<<16)
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for i := 0; i < 4; i++ {
			if _, err := c.Write(junk); err != nil {
				break
			}
		}
		<-stop
	}()
	t.Cleanup(func() { close(stop); ln.Close(); wg.Wait() })
	_, err = socketframe.New(500*time.Millisecond).Deliver(context.Background(), session(t, path), msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "a peer that never closed passed for one that did: %v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
}

// TestSocketInterruptedAfterTheFrame: Ctrl-C (the context canceled) after
// the frame was written is not a failure: the session has the text, so
// the outcome is unknown, never delivery_failed (a retry would send it twice).
func TestSocketInterruptedAfterTheFrame(t *testing.T) {
	path := filepath.Join(shortDir(t), "s.sock")
	l := socktest.Listen(t, path, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		l.Wait(1)
		cancel()
	}()
	_, err := socketframe.New(time.Minute).Deliver(ctx, session(t, path), msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "not a refusal: %v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, "%s", r.Detail)
	assert.Len(t, l.Wait(1), 1, "the frame was written")
}

// TestSocketPathLength: MaxSocketPath bytes (107 on Linux) is the most a Unix socket address holds;
// a longer path is refused before connecting and never truncated.
func TestSocketPathLength(t *testing.T) {
	dir := shortDir(t)
	pad := func(n int) string { return filepath.Join(dir, strings.Repeat("a", n-len(dir)-1)) }

	at := pad(domain.MaxSocketPath)
	require.Len(t, at, domain.MaxSocketPath)
	l := socktest.Listen(t, at, false)
	_, err := socketframe.New(5*time.Second).Deliver(context.Background(), session(t, at), msg(t, "fits"))
	require.NoError(t, err, "a MaxSocketPath-byte path is a valid socket address")
	require.Len(t, l.Wait(1), 1)

	over := at + ".sock" // its first 107 bytes name the listener above
	for _, tr := range []func() error{
		func() error {
			_, err := socketframe.New(5*time.Second).Deliver(context.Background(), session(t, over), msg(t, "too long"))
			return err
		},
		func() error {
			_, err := socketframe.New(5*time.Second).Plan(session(t, over), msg(t, "too long"))
			return err
		},
	} {
		err := tr()
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "not a refusal: %v", err)
		assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
		assert.Contains(t, r.Detail, "112 bytes, longer than a Unix socket address holds (107); not truncated")
	}
	assert.Equal(t, 1, l.Conns(), "the truncated path got a connection")
}

func TestSocketPlan(t *testing.T) {
	path := filepath.Join(shortDir(t), "x.sock")
	l := socktest.Listen(t, path, false)
	p, err := socketframe.New(0).Plan(session(t, path), msg(t, "plan \"me\"\n"))
	require.NoError(t, err)
	assert.Equal(t, domain.Plan{Transport: "socket", Socket: path, Frame: string(wantFrame(t, "plan \"me\"\n"))}, p)
	assert.Zero(t, l.Conns(), "a plan does not connect")
}

func TestSocketNewerPeerProtocol(t *testing.T) {
	rec := session(t, "/run/x.sock").Record()
	rec.PeerProtocol = 2
	_, err := socketframe.New(0).Deliver(context.Background(), transporttest.Session(t, rec), msg(t, "hi"))
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "not a refusal: %v", err)
	assert.Equal(t, domain.ReasonHarnessUnsupported, r.Reason)
}

// A session knows a socket post's sender by its pid, and drops a post
// identical to the previous one from that process within 30 s (measured on
// 2.1.328 through one long-lived peerctl-mcp). So a repeat from this
// process is refused without connecting; a post that never reached the
// socket does not count, a different text in between or another socket
// is posted.
func TestSocketRefusesARepeatTheSessionWouldDrop(t *testing.T) {
	dir := shortDir(t)
	one, two := filepath.Join(dir, "1.sock"), filepath.Join(dir, "2.sock")
	l1, l2 := socktest.Listen(t, one, false), socktest.Listen(t, two, false)
	tr := socketframe.New(5 * time.Second)
	send := func(sock, text string) error {
		_, err := tr.Deliver(context.Background(), session(t, sock), msg(t, text))
		return err
	}
	require.NoError(t, send(one, "same"))
	err := send(one, "same")
	rf, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
	assert.Contains(t, rf.Detail, "nothing was sent")
	require.NoError(t, send(two, "same"), "another session")
	require.NoError(t, send(one, "other"))
	require.NoError(t, send(one, "same"), "the previous text differs")
	l1.Wait(3)
	l2.Wait(1)
	var got []string
	for _, f := range l1.Frames() {
		got = append(got, decodeFrame(t, f))
	}
	assert.Equal(t, []string{"same", "other", "same"}, got)

	// A socket file nobody listens on: the post fails at connect.
	gone := filepath.Join(dir, "gone.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: gone, Net: "unix"})
	require.NoError(t, err)
	ln.SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	err = send(gone, "again")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "the same text")
	require.NoError(t, os.Remove(gone))
	socktest.Listen(t, gone, false)
	require.NoError(t, send(gone, "again"), "the failed post was not a previous message")
}
