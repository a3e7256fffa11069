//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/test/liveqwen"
)

// TestLiveQwenCodeMessageCap: a real Qwen Code session takes a message of
// the cap's size (qwenregistry.MaxMessage bytes of text with words and
// lines, as a user's are) while a turn runs, so that it waits in the
// TUI's queue (where a longer one wedged the session), and its inbox
// still takes the next one; both reach the model once the turn ends. One
// byte more is refused invalid_message (exit 8) before anything is sent.
func TestLiveQwenCodeMessageCap(t *testing.T) {
	bin := liveqwen.Require(t, liveqwen.Version())
	root := liveqwen.NewRoot(t)
	root.Settings(t, `{"agents":{"crossSessionInbound":"accept"}}`)
	a := liveqwen.Start(t, bin, root, liveqwen.Options{Label: "cap"})
	env := root.Env()
	send := func(text string) (qwenSent, result) {
		t.Helper()
		r := runPeerctl(t, runOpts{Env: env, Stdin: []byte(text)}, "send", "--json", a.SessionID, "-")
		var out qwenSent
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		return out, r
	}

	head := fmt.Sprintf("peerctl live qwen cap %d:", time.Now().UnixNano())
	var b strings.Builder
	b.WriteString(head)
	words := strings.Fields("the API changed so rebase onto main and run the tests again before you push é")
	for i := 0; b.Len() < qwenregistry.MaxMessage; i++ {
		b.WriteString(words[i%len(words)])
		if i%12 == 11 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	full := b.String()
	for len(full) > qwenregistry.MaxMessage { // whole runes: é is 2 bytes
		full = full[:len(full)-1]
		full = strings.ToValidUTF8(full, "")
	}
	full = strings.TrimRight(full, " \n") + strings.Repeat("x", qwenregistry.MaxMessage-len(strings.TrimRight(full, " \n")))
	require.Len(t, full, qwenregistry.MaxMessage)

	release := a.Stub.Hold(t)
	busy := fmt.Sprintf("peerctl live qwen cap %d: a turn that runs on", time.Now().UnixNano())
	_, r := send(busy)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	a.WaitTranscript(t, busy, 120*time.Second)

	out, r := send(full)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, []string{"delivered", "posted"}, out.Outcome)
	next := fmt.Sprintf("peerctl live qwen cap %d: and one more", time.Now().UnixNano())
	out, r = send(next)
	require.Equal(t, 0, r.Code, "the inbox still takes messages; stderr: %s\nscreen:\n%s", r.Stderr, a.Screen())
	assert.Contains(t, []string{"delivered", "posted"}, out.Outcome)

	release()
	a.WaitTranscript(t, head, 120*time.Second)
	a.WaitTranscript(t, next, 120*time.Second)

	out, r = send(full + "x")
	assert.Equal(t, 8, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "invalid_message", out.Refusal.Reason)
	assert.Contains(t, string(r.Stderr), "Qwen Code 0.24.4 takes at most")
}
