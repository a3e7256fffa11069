package cli

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/outboxstore"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testproc"
)

// farRun runs peerctl in-process as a far side's peerctl run over ssh
// (--hello) with stdin held open by the test: feed writes to it, hangUp
// ends it as a caller that is gone ends it. done is closed when the
// command returned, with its exit code in code.
type farRun struct {
	feed   *io.PipeWriter
	stdout *testproc.Buffer
	stderr *testproc.Buffer
	done   chan struct{}
	code   int
}

func startFar(t *testing.T, args ...string) *farRun {
	t.Helper()
	in, feed := io.Pipe()
	f := &farRun{feed: feed, stdout: &testproc.Buffer{}, stderr: &testproc.Buffer{}, done: make(chan struct{})}
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "HOME": t.TempDir()}
	c := newFactory(in, f.stdout, f.stderr, func(k string) string { return env[k] })
	c.store = outboxstore.Store{} // as peerctl-mcp: never exec'd into one found on PATH
	go func() {
		defer close(f.done)
		f.code = execute(context.Background(), c, append([]string{"--hello=" + strconv.Itoa(ports.RemoteProtocol)}, args...))
	}()
	t.Cleanup(func() {
		_ = feed.Close()
		f.ended(t, 10*time.Second) // a command that does not end fails its test, not the run
	})
	return f
}

// ended waits (bounded) for the command's end.
func (f *farRun) ended(t *testing.T, within time.Duration) bool {
	t.Helper()
	select {
	case <-f.done:
		return true
	case <-time.After(within):
		return false
	}
}

// TestFarSideEndsWithItsCaller: a command run over ssh ends when its stdin
// (held open by the caller for the whole call) ends, so a caller that
// timed out, was killed or lost its connection leaves nothing running
// there: watch runs until then, and ends then.
func TestFarSideEndsWithItsCaller(t *testing.T) {
	f := startFar(t, "watch", "--json")
	require.Eventually(t, func() bool { return bytes.Contains([]byte(f.stdout.String()), []byte(`"hello":"peerctl"`)) }, 30*time.Second, 10*time.Millisecond)
	assert.False(t, f.ended(t, 300*time.Millisecond), "watch runs while its caller is there; stderr: %s", f.stderr.String())
	require.NoError(t, f.feed.Close())
	assert.True(t, f.ended(t, 30*time.Second), "watch ended when its caller went; stderr: %s", f.stderr.String())
}

// TestFarSendReadsTheAnnouncedTextOnly: send over ssh reads exactly the
// bytes --stdin-bytes announced and goes on while the caller holds stdin
// open (it would wait for the end of stdin otherwise, which comes only
// when the caller is gone); a text cut short is refused, nothing sent.
func TestFarSendReadsTheAnnouncedTextOnly(t *testing.T) {
	t.Run("the announced bytes, stdin still open", func(t *testing.T) {
		f := startFar(t, "send", "--stdin-bytes=5", "--json", "--", "no-such-session", "-")
		_, err := f.feed.Write([]byte("hello"))
		require.NoError(t, err)
		require.True(t, f.ended(t, 30*time.Second), "send went on after its 5 bytes; stderr: %s", f.stderr.String())
		assert.Equal(t, wire.ExitNotLive, f.code, "stdout: %s stderr: %s", f.stdout.String(), f.stderr.String())
	})
	t.Run("cut short", func(t *testing.T) {
		f := startFar(t, "send", "--stdin-bytes=5", "--json", "--", "no-such-session", "-")
		_, err := f.feed.Write([]byte("hel"))
		require.NoError(t, err)
		require.NoError(t, f.feed.Close())
		require.True(t, f.ended(t, 30*time.Second))
		assert.Equal(t, wire.ExitDeliveryFailed, f.code)
		assert.Contains(t, f.stdout.String(), "3 bytes, 5 were announced")
	})
}

// TestStdinBytesIsNoFlagForPeople: --stdin-bytes is the announcement of a
// peerctl calling over ssh (--hello) only; given anywhere else, it is the
// TEXT that was meant after -- and is refused as an unknown flag, not
// taken as a length to read stdin by (issue 27).
func TestStdinBytesIsNoFlagForPeople(t *testing.T) {
	r := evRun(t, nil, nil, "send", "--dry-run", "proj-89", "--stdin-bytes=3")
	assert.Equal(t, wire.ExitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "unknown flag: --stdin-bytes (a TEXT that starts with - goes after --")
}
