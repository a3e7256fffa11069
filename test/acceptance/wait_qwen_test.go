package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/test/fakeqwen"
	"github.com/peerctl/peerctl/test/testproc"
)

// A Qwen Code session whose inbox takes messages and never answers.
func silentQwenSession(t *testing.T) (env []string, inbox *fakeqwen.Inbox) {
	t.Helper()
	sock := filepath.Join(catSocketDir(t), "q.sock")
	inbox = fakeqwen.Listen(t, sock, 0, func(string) string { return "" })
	home := fakeqwen.Home(t, testproc.Sleeper(t), "aaaaaaaa-1111-4111-8111-111111111111", sock)
	config, _ := catRegistry(t)
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "QWEN_HOME=" + home, "CLAUDE_CONFIG_DIR=" + config}, inbox
}

// send --wait to a Qwen Code session cannot see its turn end (its records
// publish no status): it is refused before anything is sent (exit 6), never
// an exit 0 that did not wait, so `send --wait=10m X "..." && next` does
// not run next.
func TestSendWaitQwenCodeRefusedNothingSent(t *testing.T) {
	env, inbox := silentQwenSession(t)
	r := runPeerctl(t, runOpts{Env: env}, "send", "--wait=30s", "app-3b", "run it")
	assert.Equal(t, 6, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "harness_unsupported")
	assert.Contains(t, string(r.Stderr), "nothing was sent")
	assert.Empty(t, r.Stdout)

	r = runPeerctl(t, runOpts{Env: env}, "send", "--json", "--wait=30s", "app-3b", "run it")
	assert.Equal(t, 6, r.Code, "stderr: %s", r.Stderr)
	var out struct {
		OK      bool `json:"ok"`
		Refusal struct {
			Reason string `json:"reason"`
		} `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	assert.False(t, out.OK)
	assert.Equal(t, "harness_unsupported", out.Refusal.Reason)
	assert.Empty(t, inbox.Frames(), "nothing reached the session")
}

// send --await-reply to a Qwen Code session says on stderr, with its
// receipt, that the session's model cannot reply to peerctl; stdout stays
// the reply's (or, with --json, one document).
func TestSendAwaitReplyQwenCodeSaysItsModelCannotReply(t *testing.T) {
	env, inbox := silentQwenSession(t)
	const note = "a Qwen Code session's model cannot reply to peerctl"
	r := runPeerctl(t, runOpts{Env: env}, "send", "--await-reply=1s", "app-3b", "which branch?")
	assert.Equal(t, 9, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), note)
	assert.Empty(t, r.Stdout)

	r = runPeerctl(t, runOpts{Env: env}, "send", "--json", "--await-reply=1s", "app-3b", "which branch now?")
	assert.Equal(t, 9, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), note)
	assert.NotContains(t, string(r.Stdout), note)
	var out map[string]any
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	assert.Len(t, inbox.Frames(), 2)
}

// A message larger than Qwen Code takes is refused invalid_message (exit
// 8) before anything is sent, naming the version and the cap; one of the
// cap's size is delivered. A larger one wedged a real 0.24.4 session's
// inbox (docs/QWEN-CODE-FACTS.md).
func TestSendQwenCodeMessageCap(t *testing.T) {
	env, inbox := silentQwenSession(t)
	over := strings.Repeat("x", qwenregistry.MaxMessage+1)
	r := runPeerctl(t, runOpts{Env: env, Stdin: []byte(over)}, "send", "app-3b", "-")
	assert.Equal(t, 8, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "invalid_message")
	assert.Contains(t, string(r.Stderr), "Qwen Code 0.24.4 takes at most 16384 bytes")
	assert.Empty(t, inbox.Frames(), "nothing reached the session")

	r = runPeerctl(t, runOpts{Env: env, Stdin: []byte(over[1:])}, "send", "--no-confirm", "app-3b", "-")
	assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	frames := inbox.Frames()
	require.Len(t, frames, 1)
	assert.Len(t, frames[0]["message"].(map[string]any)["content"], qwenregistry.MaxMessage)
}
