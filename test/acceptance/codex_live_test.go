//go:build unix

package acceptance

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecodex"
)

// codexTurn bounds the wait for a turn of a live Codex session (the
// stand-in answers at once; the rest is Codex on a loaded machine).
const codexTurn = 90 * time.Second

// hasAgentMessage is a rollout condition: an agent_message with text.
func hasAgentMessage(text string) func([]livecodex.RolloutItem) bool {
	return func(items []livecodex.RolloutItem) bool {
		for _, it := range items {
			if m, ok := it.AgentMessage(); ok && m == text {
				return true
			}
		}
		return false
	}
}

// agentMessages are the agent_message texts of a rollout, oldest first.
func agentMessages(items []livecodex.RolloutItem) []string {
	var out []string
	for _, it := range items {
		if m, ok := it.AgentMessage(); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestLiveCodexInfrastructure checks the live Codex set-up itself (no
// peerctl): a real Codex TUI in tmux, offline, whose model is the Go
// stand-in, starts a thread found by its rollout; `codex queue` runs a
// turn in it; a held turn keeps the thread busy and a queued message runs
// after it; a --no-daemon TUI in the same home starts its own thread; the
// TUI quits on Ctrl-C; the daemon and its helper are stopped at the end.
func TestLiveCodexInfrastructure(t *testing.T) {
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	a := livecodex.Start(t, root, livecodex.Options{Label: "a", Prompt: "ping smoke-a"})
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, a.ThreadID)
	a.WaitRollout(t, "the first turn's answer", codexTurn, hasAgentMessage("pong: ping smoke-a"))
	assert.NotZero(t, root.DaemonPID(), "a plain TUI starts the home's app-server daemon")

	t.Run("codex queue runs a turn", func(t *testing.T) {
		root.Codex(t, "queue", "--thread", a.ThreadID, "--message", "ping smoke-q")
		a.WaitRollout(t, "the queued turn's answer", codexTurn, hasAgentMessage("pong: ping smoke-q"))
	})

	t.Run("a held turn keeps the thread busy", func(t *testing.T) {
		root.Codex(t, "queue", "--thread", a.ThreadID, "--message", "hold g1")
		deadline := time.Now().Add(codexTurn)
		for !root.Model.Held("g1") {
			require.True(t, time.Now().Before(deadline), "the held turn reached the model; screen:\n%s", a.Screen())
			time.Sleep(50 * time.Millisecond)
		}
		root.Codex(t, "queue", "--thread", a.ThreadID, "--message", "ping after-hold")
		root.Model.Release("g1")
		items := a.WaitRollout(t, "the turn after the held one", codexTurn, hasAgentMessage("pong: ping after-hold"))
		got := agentMessages(items)
		assert.Less(t, slices.Index(got, "held g1"), slices.Index(got, "pong: ping after-hold"), "%q", got)
	})

	t.Run("a --no-daemon TUI in the same home", func(t *testing.T) {
		b := livecodex.Start(t, root, livecodex.Options{Label: "b", Args: []string{"--no-daemon"}, Prompt: "ping smoke-b"})
		assert.NotEqual(t, a.ThreadID, b.ThreadID)
		b.WaitRollout(t, "its first answer", codexTurn, hasAgentMessage("pong: ping smoke-b"))
		b.Quit()
	})

	a.Quit()
	for _, r := range root.Model.Requests() {
		if r.IsTitle() {
			return
		}
	}
	t.Errorf("the TUI asked for no title (the stand-in's title answer is untested); requests: %d", len(root.Model.Requests()))
}
