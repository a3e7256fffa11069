//go:build unix

package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/liveopencode"
)

// TestLiveOpencodeThroughServe (PEERCTL_LIVE=1): with a `peerctl serve`
// running, plain sends to a real opencode-ai 1.18.33 `opencode serve`
// session are carried by the service (its record of the sends it carried
// lists them) and delivered with opencode's own receipt, on the event
// stream its courier keeps open; after the server is killed and started
// again in the same folder, the next send through the same service
// reaches the new server.
func TestLiveOpencodeThroughServe(t *testing.T) {
	bin := liveopencode.Require(t)
	root := liveopencode.NewRoot(t, bin)
	work := root.Workdir(t, "warm")
	srv := root.Serve(t, work)
	sid := liveopencode.NewSession(t, srv.URL)
	l := &liveServe{state: t.TempDir(), run: catSocketDir(t)}
	l.env = append(slices.Clone(root.Env()), "XDG_STATE_HOME="+l.state, "XDG_RUNTIME_DIR="+l.run)
	t.Cleanup(l.kill)
	l.start(t)
	carried := func() string {
		b, _ := os.ReadFile(filepath.Join(l.state, "peerctl", "sent.jsonl"))
		return string(b)
	}
	send := func(url, label string) {
		t.Helper()
		text := fmt.Sprintf("through serve %s %d", label, time.Now().UnixNano())
		out, r := sendCodex(t, l.env, "--confirm-timeout=90s", "--from", "tester", sid, text)
		require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s\nservice log: %s", r.Stdout, r.Stderr, l.log)
		require.Equal(t, "delivered", out.Outcome, "%s\nservice log: %s", out.Detail, l.log)
		assert.Equal(t, "prompt", out.Transport)
		assert.Contains(t, out.Detail, "message.updated", "opencode's own receipt")
		assert.Contains(t, carried(), text, "the service carried it")
		var user liveopencode.Message
		for _, m := range liveopencode.Messages(t, url, sid) {
			if m.Role == "user" && len(m.Texts) == 2 && m.Texts[1] == text {
				user = m
			}
		}
		require.NotEmpty(t, user.ID, "no user message carries the text byte for byte")
		deadline := time.Now().Add(opencodeTurn)
		for !answered(liveopencode.Messages(t, url, sid), user.ID) {
			require.True(t, time.Now().Before(deadline), "no answer to %s in %s", user.ID, opencodeTurn)
			time.Sleep(250 * time.Millisecond)
		}
	}
	send(srv.URL, "one")
	send(srv.URL, "two")
	srv.Kill()
	again := root.Serve(t, work)
	send(again.URL, "after the restart")
	assert.Equal(t, 3, strings.Count(carried(), "through serve "))
}
