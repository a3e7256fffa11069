//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livecodex"
	"github.com/peerctl/peerctl/test/liveqwen"
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

// turnEndedAfter is a rollout condition: an agent_message with text, and
// after it the turn's end (an event_msg task_complete, Codex 0.171.0).
func turnEndedAfter(text string) func([]livecodex.RolloutItem) bool {
	return func(items []livecodex.RolloutItem) bool {
		answered := false
		for _, it := range items {
			if m, ok := it.AgentMessage(); ok && m == text {
				answered = true
			}
			if answered && it.Type == "event_msg" && it.PayloadType() == "task_complete" {
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
// after it; a --no-daemon TUI in the same home starts its own thread;
// `codex queue` to a thread no one has open waits for `codex resume`; the
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
		b.WaitRollout(t, "its first turn's end", codexTurn, turnEndedAfter("pong: ping smoke-b"))
		b.Quit()
	})

	t.Run("codex queue to a closed thread runs on codex resume", func(t *testing.T) {
		closed := livecodex.NewRoot(t, bin, nil)
		c := livecodex.Start(t, closed, livecodex.Options{Label: "c", Args: []string{"--no-daemon"}, Prompt: "ping smoke-c"})
		// The turn's end, not only its answer: a Ctrl-C between the two
		// interrupts the turn, and Codex 0.171.0 then does not run what was
		// queued for the thread when it is resumed (seen on a loaded machine).
		c.WaitRollout(t, "its first turn's end", codexTurn, turnEndedAfter("pong: ping smoke-c"))
		c.Quit()
		closed.Codex(t, "queue", "--thread", c.ThreadID, "--message", "ping smoke-later")
		assert.False(t, hasAgentMessage("pong: ping smoke-later")(c.Items()), "nothing ran before the resume")
		r := livecodex.Start(t, closed, livecodex.Options{Resume: c.ThreadID, Cwd: c.Cwd})
		r.WaitRollout(t, "the queued turn", codexTurn, hasAgentMessage("pong: ping smoke-later"))
	})

	a.Quit()
	for _, r := range root.Model.Requests() {
		if r.IsTitle() {
			return
		}
	}
	t.Errorf("the TUI asked for no title (the stand-in's title answer is untested); requests: %d", len(root.Model.Requests()))
}

// codexListed is one entry of `list --json` as the Codex tests read it.
type codexListed struct {
	Harness     string `json:"harness"`
	SessionID   string `json:"sessionId"`
	Name        string `json:"name"`
	PID         int    `json:"pid"`
	Cwd         string `json:"cwd"`
	Status      string `json:"status"`
	Kind        string `json:"kind"`
	Verdict     string `json:"verdict"`
	Reason      string `json:"reason"`
	Endpoint    string `json:"endpoint"`
	Addressable bool   `json:"addressable"`
}

// codexSent is `send --json`'s answer as the Codex tests read it.
type codexSent struct {
	OK        bool   `json:"ok"`
	Outcome   string `json:"outcome"`
	Transport string `json:"transport"`
	Harness   string `json:"harness"`
	SessionID string `json:"sessionId"`
	Detail    string `json:"detail"`
	Reply     struct {
		Text string `json:"text"`
	} `json:"reply"`
	Refusal struct {
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	} `json:"refusal"`
}

func listCodex(t *testing.T, env []string, args ...string) []codexListed {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env}, append([]string{"list", "--json"}, args...)...)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out []codexListed
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	return out
}

func findListed(list []codexListed, id string) (codexListed, bool) {
	for _, l := range list {
		if l.SessionID == id {
			return l, true
		}
	}
	return codexListed{}, false
}

func sendCodex(t *testing.T, env []string, args ...string) (codexSent, result) {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env, Timeout: 3 * time.Minute}, append([]string{"send", "--json"}, args...)...)
	var out codexSent
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	return out, r
}

// TestLiveCodex runs peerctl against a real Codex TUI offline (issue 21):
// the session is listed with its thread id, also while its first turn
// runs; a send is delivered through
// the app-server and its text is byte-exact in the rollout; --await-reply
// prints the stand-in's answer; a busy thread takes a message into its
// running turn, as the receipt says; within 10 s of the TUI quitting the thread is no longer listed
// live, although the daemon keeps it loaded for about a minute more.
func TestLiveCodex(t *testing.T) {
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	a := livecodex.Start(t, root, livecodex.Options{Label: "a", Prompt: "ping first"})
	a.WaitRollout(t, "the first answer", codexTurn, hasAgentMessage("pong: ping first"))
	env := root.Env()

	t.Run("the TUI's thread is listed", func(t *testing.T) {
		l, ok := findListed(listCodex(t, env, "--harness", "codex"), a.ThreadID)
		require.True(t, ok, "thread %s not listed", a.ThreadID)
		assert.Equal(t, "codex", l.Harness)
		assert.Equal(t, a.Cwd, l.Cwd)
		assert.Equal(t, "live", l.Verdict)
		assert.True(t, l.Addressable)
		assert.NotZero(t, l.PID)
	})

	t.Run("a thread in its first turn is listed", func(t *testing.T) {
		// The first turn is held: the thread is loaded and its rollout
		// written, the TUI shows it, and Codex has no thread/list row yet.
		b := livecodex.Start(t, root, livecodex.Options{Label: "b", Prompt: "hold first-turn"})
		deadline := time.Now().Add(codexTurn)
		for !root.Model.Held("first-turn") {
			require.True(t, time.Now().Before(deadline), "the first turn reached the model; screen:\n%s", b.Screen())
			time.Sleep(50 * time.Millisecond)
		}
		l, ok := findListed(listCodex(t, env, "--harness", "codex"), b.ThreadID)
		if assert.True(t, ok, "thread %s not listed", b.ThreadID) {
			assert.Equal(t, b.Cwd, l.Cwd)
		}
		root.Model.Release("first-turn")
		b.Quit()
	})

	t.Run("send is delivered, byte-exact in the rollout", func(t *testing.T) {
		text := fmt.Sprintf("peerctl live codex %d: \"quoted\" $HOME `tick` ünï\n\ttabbed line", time.Now().UnixNano())
		out, r := sendCodex(t, env, "--from", "tester", a.ThreadID, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "delivered", out.Outcome)
		assert.Equal(t, "codex", out.Harness)
		assert.Equal(t, a.ThreadID, out.SessionID)
		items := a.WaitRollout(t, "the sent text", codexTurn, func(items []livecodex.RolloutItem) bool {
			return slices.ContainsFunc(livecodex.UserMessages(items), func(m string) bool { return strings.Contains(m, text) })
		})
		for _, m := range livecodex.UserMessages(items) {
			if strings.Contains(m, text) {
				assert.Contains(t, m, "tester", "the envelope names the sender")
			}
		}
	})

	t.Run("await-reply prints the stand-in's answer", func(t *testing.T) {
		probe := fmt.Sprintf("ping await-%d", time.Now().UnixNano())
		r := runPeerctl(t, runOpts{Env: env, Timeout: 3 * time.Minute}, "send", "--await-reply=90s", a.ThreadID, probe)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "pong: "+probe+"\n", string(r.Stdout))
	})

	t.Run("a busy thread takes it into its running turn", func(t *testing.T) {
		_, r := sendCodex(t, env, a.ThreadID, "hold busy")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		deadline := time.Now().Add(codexTurn)
		for !root.Model.Held("busy") {
			require.True(t, time.Now().Before(deadline), "the held turn reached the model; screen:\n%s", a.Screen())
			time.Sleep(50 * time.Millisecond)
		}
		out, r := sendCodex(t, env, a.ThreadID, "ping next")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.True(t, out.OK)
		// Measured on 0.171.0: turn/start on a running turn names that
		// turn, and the text is answered within it.
		assert.Contains(t, out.Detail, "into its running turn", "the receipt says what Codex did")
		root.Model.Release("busy")
		items := a.WaitRollout(t, "the next turn's answer", codexTurn, hasAgentMessage("pong: ping next"))
		got := agentMessages(items)
		assert.Less(t, slices.Index(got, "held busy"), slices.Index(got, "pong: ping next"), "%q", got)
	})

	t.Run("not listed live within 10 s of the TUI quitting", func(t *testing.T) {
		a.Quit()
		quit := time.Now()
		for {
			l, ok := findListed(listCodex(t, env, "--harness", "codex"), a.ThreadID)
			if !ok || l.Verdict != "live" {
				break
			}
			require.Less(t, time.Since(quit), 10*time.Second, "still listed live: %+v", l)
			time.Sleep(200 * time.Millisecond)
		}
		assert.NotZero(t, root.DaemonPID(), "the daemon still runs (its afterglow is what this checks)")
	})
}

// TestLiveCodexQueueToClosedThread: `send --transport queue` to a thread
// no one has open is queued (Codex's durable queue), and a `codex resume`
// of the thread runs it; without --transport queue it is refused not_live
// with the hint. The TUI ran with --no-daemon, so no daemon holds
// the thread after it quit.
func TestLiveCodexQueueToClosedThread(t *testing.T) {
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	b := livecodex.Start(t, root, livecodex.Options{Label: "b", Args: []string{"--no-daemon"}, Prompt: "ping before"})
	// The turn's end, not only its answer: a Ctrl-C between the two
	// interrupts the turn (a loaded machine widens that window), and a
	// thread resumed after an interrupted turn did not run its queue.
	b.WaitRollout(t, "the first turn's end", codexTurn, turnEndedAfter("pong: ping before"))
	b.Quit()
	require.Zero(t, root.DaemonPID(), "no daemon holds the thread")

	probe := fmt.Sprintf("ping queued-%d", time.Now().UnixNano())
	// Without --transport queue a closed thread is refused, speaking of
	// every harness searched and of the durable queue.
	refused := runPeerctl(t, runOpts{Env: root.Env()}, "send", b.ThreadID, probe)
	assert.Equal(t, 3, refused.Code, "not_live: %s", refused.Stderr)
	assert.Contains(t, string(refused.Stderr), "--transport queue would keep the message durably")
	// The harnesses that are here (installed or with state), Codex among
	// them, each a plug-in's.
	searched := regexp.MustCompile(`searched the ([a-z, -]+) sessions`).FindStringSubmatch(string(refused.Stderr))
	require.NotNil(t, searched, "stderr: %s", refused.Stderr)
	var words []string
	for _, h := range wiring.Plugins().Kinds() {
		words = append(words, h.String())
	}
	named := regexp.MustCompile(`, | and `).Split(searched[1], -1)
	assert.Contains(t, named, "codex")
	assert.Subset(t, words, named)

	out, r := sendCodex(t, root.Env(), "--transport", "queue", b.ThreadID, probe)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, "queued", out.Outcome)
	assert.Equal(t, "queue", out.Transport)
	assert.Contains(t, string(r.Stderr)+string(r.Stdout), "resume", "the receipt says it runs when the thread is resumed")
	assert.False(t, hasAgentMessage("pong: "+probe)(b.Items()), "nothing ran before the resume")

	c := livecodex.Start(t, root, livecodex.Options{Resume: b.ThreadID, Cwd: b.Cwd})
	c.WaitRollout(t, "the queued message's turn", codexTurn, hasAgentMessage("pong: "+probe))
}

// TestLiveCodexThreeHarnesses: one `list` holds a Claude Code, a Qwen Code
// and a Codex session, each under its harness.
func TestLiveCodexThreeHarnesses(t *testing.T) {
	cbin := livecodex.Require(t)
	ccBin := livecc.Require(t, livecc.Version())
	qBin := liveqwen.Require(t, liveqwen.Version())
	cc := livecc.Start(t, ccBin, livecc.Options{NoAPIKey: true})
	qroot := liveqwen.NewRoot(t)
	qroot.Settings(t, `{"agents":{"crossSessionInbound":"accept"}}`)
	q := liveqwen.Start(t, qBin, qroot, liveqwen.Options{Label: "q"})
	root := livecodex.NewRoot(t, cbin, nil)
	x := livecodex.Start(t, root, livecodex.Options{Label: "x"})

	r := runPeerctl(t, runOpts{Env: root.Env("CLAUDE_CONFIG_DIR="+cc.ConfigDir, "QWEN_HOME="+qroot.QwenHome)}, "list", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var list []codexListed
	require.NoError(t, json.Unmarshal(r.Stdout, &list), "%s", r.Stdout)
	got := map[string]string{}
	for _, l := range list {
		got[l.SessionID] = l.Harness
	}
	assert.Equal(t, "claude-code", got[cc.SessionID], "%+v\nstderr: %s", list, r.Stderr)
	assert.Equal(t, "qwen-code", got[q.SessionID], "%+v\nstderr: %s", list, r.Stderr)
	if !assert.Equal(t, "codex", got[x.ThreadID], "%+v\nstderr: %s", list, r.Stderr) {
		all := runPeerctl(t, runOpts{Env: root.Env()}, "list", "--all", "--json", "--harness", "codex")
		t.Logf("list --all --harness codex (exit %d): %s\nstderr: %s\ndaemon pid %d", all.Code, all.Stdout, all.Stderr, root.DaemonPID())
	}
}

// TestLiveCodexReachesClaudeCodeThroughMCP: a Codex agent with peerctl as
// an MCP server (`codex mcp add peerctl -- peerctl mcp`, README) sends to
// a Claude Code session: the stand-in model calls send_message, peerctl
// delivers by its courier, the text reaches the Claude Code transcript
// byte-exact, and Codex hands peerctl's receipt back to the model.
func TestLiveCodexReachesClaudeCodeThroughMCP(t *testing.T) {
	cbin := livecodex.Require(t)
	ccBin := livecc.Require(t, livecc.Version())
	target := livecc.Start(t, ccBin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	root := livecodex.NewRoot(t, cbin, nil)
	// Codex starts MCP servers with a short list of its own variables, so
	// the test's registry is given by flag.
	root.AddMCP(t, "peerctl", peerctlWithMCP(t), "--config-dir", target.ConfigDir, "mcp", "--claude", ccBin)

	text := fmt.Sprintf("codex via peerctl mcp %d: \"quoted\", ünï", time.Now().UnixNano())
	args, err := json.Marshal(map[string]string{"to": target.SessionID, "text": text})
	require.NoError(t, err)
	x := livecodex.Start(t, root, livecodex.Options{Label: "x", Prompt: "call send_message " + string(args)})

	items := x.WaitRollout(t, "the tool's result handed back", 3*time.Minute, func(items []livecodex.RolloutItem) bool {
		return slices.ContainsFunc(agentMessages(items), func(m string) bool { return strings.HasPrefix(m, "tool said: ") })
	})
	var said string
	for _, m := range agentMessages(items) {
		if strings.HasPrefix(m, "tool said: ") {
			said = strings.TrimPrefix(m, "tool said: ")
		}
	}
	var receipt struct {
		OK        bool   `json:"ok"`
		SessionID string `json:"sessionId"`
		Outcome   string `json:"outcome"`
	}
	// Codex 0.171.0 hands an MCP result on as "Wall time: …\nOutput:\n<text>".
	_, out, _ := strings.Cut(said, "\nOutput:\n")
	require.NoError(t, json.Unmarshal([]byte(out), &receipt), "tool result: %s", said)
	assert.True(t, receipt.OK, said)
	assert.Equal(t, target.SessionID, receipt.SessionID)
	inner := mustJSON(t, "\n"+text+"\n")
	target.WaitTranscript(t, inner[1:len(inner)-1], 60*time.Second)
}
