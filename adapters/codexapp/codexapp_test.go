package codexapp_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/adapters/codexapp/codexapptest"
)

func TestSocketIsChecked(t *testing.T) {
	uid := os.Getuid()
	f := codexapptest.Start(t, nil)
	got, err := codexapp.Socket(f.Home, uid, f.Dir)
	require.NoError(t, err)
	assert.Equal(t, f.Socket, got)

	t.Run("no socket: no daemon", func(t *testing.T) {
		_, err := codexapp.Socket(t.TempDir(), uid, f.Dir)
		assert.ErrorIs(t, err, codexapp.ErrNoDaemon)
	})
	t.Run("another uid's", func(t *testing.T) {
		_, err := codexapp.Socket(f.Home, uid+1, f.Dir)
		assert.ErrorIs(t, err, codexapp.ErrNotOurs)
		assert.Contains(t, err.Error(), "owned by uid")
	})
	t.Run("a link out of the daemon's folder", func(t *testing.T) {
		_, err := codexapp.Socket(f.Home, uid) // the default folder, /tmp/codex-daemon-<uid>
		assert.ErrorIs(t, err, codexapp.ErrNotOurs)
		assert.Contains(t, err.Error(), "outside "+codexapp.DaemonDir(uid))
	})
	t.Run("not a socket", func(t *testing.T) {
		home, dir := t.TempDir(), shortDir(t)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s"), []byte("x"), 0o600))
		link(t, home, filepath.Join(dir, "s"))
		_, err := codexapp.Socket(home, uid, dir)
		assert.ErrorIs(t, err, codexapp.ErrNotOurs)
		assert.Contains(t, err.Error(), "not a socket (a regular file)")
	})
	t.Run("a folder others may enter", func(t *testing.T) {
		home, dir := t.TempDir(), shortDir(t)
		require.NoError(t, os.Chmod(dir, 0o755))
		ln, err := net.Listen("unix", filepath.Join(dir, "s"))
		require.NoError(t, err)
		defer ln.Close()
		link(t, home, filepath.Join(dir, "s"))
		_, err = codexapp.Socket(home, uid, dir)
		assert.ErrorIs(t, err, codexapp.ErrNotOurs)
		assert.Contains(t, err.Error(), "0755")
	})
}

func link(t *testing.T, home, target string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "app-server-control"), 0o700))
	require.NoError(t, os.Symlink(target, codexapp.ControlSocket(home)))
}

func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cxt")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(d, 0o700))
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func TestOpenListsThreads(t *testing.T) {
	f := codexapptest.Start(t, map[string]codexapptest.Handler{
		"thread/loaded/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": []string{"t1"}, "nextCursor": nil}, "", true
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := codexapp.Open(ctx, f.Socket, "test")
	require.NoError(t, err)
	ids, err := c.LoadedThreads(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"t1"}, ids)
	require.NoError(t, c.Close())
	got := f.Got()
	require.GreaterOrEqual(t, len(got), 3)
	assert.Equal(t, "initialize", got[0].Method)
	assert.Equal(t, "initialized", got[1].Method)
	assert.Empty(t, got[1].ID, "initialized is a notification")
}

// A daemon whose nextCursor loops is read once per page, and each id is
// listed once (issue 28: one thread listed 20 times).
func TestLoopingCursorListsEachThreadOnce(t *testing.T) {
	f := codexapptest.Start(t, map[string]codexapptest.Handler{
		"thread/loaded/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": []string{"t1", "t1"}, "nextCursor": "again"}, "", true
		},
		"thread/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
			return map[string]any{"data": []map[string]any{{"id": "t1"}, {"id": "t2"}}, "nextCursor": "again"}, "", true
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := codexapp.Open(ctx, f.Socket, "test")
	require.NoError(t, err)
	defer c.Close()
	ids, err := c.LoadedThreads(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"t1"}, ids)
	threads, more, err := c.ListThreads(ctx)
	require.NoError(t, err)
	assert.False(t, more)
	require.Len(t, threads, 2)
	calls := 0
	for _, m := range f.Got() {
		if m.Method == "thread/list" || m.Method == "thread/loaded/list" {
			calls++
		}
	}
	assert.Equal(t, 4, calls, "two pages each: the first, and the one the cursor names")
}

// A daemon that never answers: every call ends with its context, and
// nothing is left running.
func TestDaemonThatNeverAnswers(t *testing.T) {
	f := codexapptest.Start(t, map[string]codexapptest.Handler{
		"initialize": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "", false },
	})
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := codexapp.Open(ctx, f.Socket, "test")
	var silent *codexapp.NoAnswerError
	require.ErrorAs(t, err, &silent)
	assert.Equal(t, "initialize", silent.Step)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "Codex's app-server at "+f.Socket+" took the connection but did not answer initialize in time", err.Error())
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+1 }, 5*time.Second, 10*time.Millisecond, "the connection's goroutines end")
}

// A daemon stopped with SIGSTOP (its socket takes the connection, nothing
// reads it): the handshake ends with its context, the error says which
// step got no answer, in words of the daemon, not of the WebSocket
// library's layers.
func TestStoppedDaemon(t *testing.T) {
	f := codexapptest.StartStopped(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := codexapp.Open(ctx, f.Socket, "test")
	var silent *codexapp.NoAnswerError
	require.ErrorAs(t, err, &silent)
	assert.Equal(t, f.Socket, silent.Socket)
	assert.Equal(t, "the WebSocket upgrade", silent.Step)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "Codex's app-server at "+f.Socket+" took the connection but did not answer the WebSocket upgrade in time", err.Error())
	assert.Empty(t, f.Got())
}

// A socket nothing listens on (a daemon killed leaves it): connection
// refused, said by the system's words alone.
func TestSocketNothingListensOn(t *testing.T) {
	sock := filepath.Join(shortDir(t), "s")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = codexapp.Dial(ctx, sock)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, "connect to Codex's app-server at "+sock+": connection refused", err.Error())
}

func TestMalformedAndHugeFrames(t *testing.T) {
	for name, frame := range map[string][]byte{
		"not JSON": []byte("{not json"),
		"huge":     []byte(`{"id":2,"result":"` + strings.Repeat("x", codexapp.MaxFrame+1) + `"}`),
	} {
		t.Run(name, func(t *testing.T) {
			f := codexapptest.Start(t, map[string]codexapptest.Handler{
				"thread/loaded/list": func(p *codexapptest.Peer, _ codexapptest.Msg) (any, string, bool) {
					_ = p.Send(frame)
					return nil, "", false
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := codexapp.Open(ctx, f.Socket, "test")
			require.NoError(t, err)
			defer c.Close()
			_, err = c.LoadedThreads(ctx)
			require.Error(t, err)
			assert.False(t, errors.Is(err, context.DeadlineExceeded), "the bad frame ends the call, not the deadline: %v", err)
			<-c.Done()
			assert.Error(t, c.Err())
		})
	}
}

func TestErrorAnswerIsQuoted(t *testing.T) {
	f := codexapptest.Start(t, map[string]codexapptest.Handler{
		"turn/start": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) { return nil, "thread not found", true },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := codexapp.Open(ctx, f.Socket, "test")
	require.NoError(t, err)
	defer c.Close()
	err = c.Call(ctx, "turn/start", map[string]any{}, nil)
	var rpc *codexapp.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, "Codex answered turn/start with error -32000: thread not found", err.Error())
}
