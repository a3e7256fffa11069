//go:build unix

package acceptance

// Replies against real Claude Code (PEERCTL_LIVE=1), offline, no login:
// two real interactive sessions whose model is a scripted stand-in
// (test/scriptedmodel) that answers every cross-session message with a
// SendMessage back to its sender, as docs/CLAUDE-CODE-FACTS.md measured
// ("Replies work with no model anywhere"). One pair of sessions serves
// every check, to keep the live suite lean.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// SilentPrefix marks a message the scripted sessions do not answer.
const silentPrefix = "silent: "

var inboundWrapped = regexp.MustCompile(`(?s)<cross-session-message from="(uds:[^"]*)" from-name="[^"]*"[^>]*>\n?(.*?)\n?</cross-session-message>`)

// replyScript is the sessions' model: when the conversation holds more
// cross-session messages than the SendMessage calls it has made, it calls
// SendMessage for the oldest one not answered yet, to its sender, with
// "pong: <text>" (a text starting with silentPrefix gets no answer); any
// other request (a title, a quota probe, the end of a turn) gets a short
// text.
func replyScript(r *scriptedmodel.Request) scriptedmodel.Reply {
	if len(r.Tools) == 0 {
		return scriptedmodel.Say("ok")
	}
	var pending [][2]string // from, text
	for _, msg := range r.Messages {
		// A message that arrives during a turn comes as a "system" entry.
		if msg.Role != "user" && msg.Role != "system" {
			continue
		}
		for _, b := range msg.Content {
			for _, m := range inboundWrapped.FindAllStringSubmatch(b.Text, -1) {
				if !strings.HasPrefix(m[2], silentPrefix) {
					pending = append(pending, [2]string{m[1], m[2]})
				}
			}
		}
	}
	if done := r.ToolUses("SendMessage"); done < len(pending) {
		p := pending[done]
		return scriptedmodel.Reply{Blocks: []scriptedmodel.Block{scriptedmodel.ToolUse("SendMessage",
			map[string]string{"to": p[0], "message": "pong: " + p[1], "summary": "pong"})}}
	}
	return scriptedmodel.Say("ok")
}

func TestLiveReplies(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	srv := scriptedmodel.Start(t, replyScript)
	root := livecc.NewRoot(t)
	opts := livecc.Options{Root: root, ModelURL: srv.URL(), ModelKey: srv.Key(), Settings: livecc.ReplySettings(), WaitSettled: true}
	var sessions [2]*livecc.Session
	for i := range sessions {
		o := opts
		o.Name = "replier-" + strconv.Itoa(i+1)
		sessions[i] = livecc.Start(t, bin, o)
	}
	env := courierEnv(t, sessions[0].ConfigDir, bin)

	t.Run("await-reply prints the reply", func(t *testing.T) {
		text := "ping ünï \"quoted\"\nsecond line"
		r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--await-reply=60s", "--from", "asker", sessions[0].SessionID, text)
		require.Equal(t, 0, r.Code, "stderr: %s\nscreen:\n%s", r.Stderr, sessions[0].Screen())
		assert.Equal(t, "pong: "+text+"\n", string(r.Stdout))
		assert.Contains(t, string(r.Stderr), "(msg_id ")
	})

	t.Run("no reply at the deadline", func(t *testing.T) {
		r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--await-reply=3s", "--json", sessions[1].SessionID, silentPrefix+"do not answer")
		require.Equal(t, 9, r.Code, "stderr: %s", r.Stderr)
		var got struct {
			MsgID   string `json:"msgId"`
			Refusal struct{ Reason string }
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		assert.Equal(t, "no_reply", got.Refusal.Reason)
		assert.NotEmpty(t, got.MsgID)
	})

	t.Run("relay: 50 sends, 50 receipts in order, 50 replies", func(t *testing.T) {
		r := startRelay(t, env, "--config-dir", sessions[0].ConfigDir)
		require.Equal(t, "ready", r.next(t)["type"])
		const n = 50
		for i := range n {
			r.write(t, map[string]any{"id": i, "to": sessions[i%2].SessionID, "text": fmt.Sprintf("m%02d", i)})
		}
		var receipts []map[string]any
		replies := map[string]string{}
		for len(receipts) < n || len(replies) < n {
			var m map[string]any
			select {
			case m = <-r.lines:
			case <-time.After(120 * time.Second):
				t.Fatalf("after %d receipts and %d replies, nothing for 120 s; relay stderr: %s\nscreens:\n%s\n%s",
					len(receipts), len(replies), r.err.String(), sessions[0].Screen(), sessions[1].Screen())
			}
			switch m["type"] {
			case "receipt":
				receipts = append(receipts, m)
			case "inbound":
				replies[m["text"].(string)] = m["fromName"].(string)
			default:
				t.Fatalf("after %d receipts and %d replies, unexpected line %v; stderr: %s", len(receipts), len(replies), m, r.err.String())
			}
		}
		msgIDs := map[any]bool{}
		for i, m := range receipts {
			assert.Equal(t, float64(i), m["id"], "input order")
			assert.Equal(t, sessions[i%2].SessionID, m["sessionId"])
			msgIDs[m["msgId"]] = true
		}
		assert.Len(t, msgIDs, n, "distinct msgIds")
		for i := range n {
			assert.Equal(t, "replier-"+strconv.Itoa(i%2+1), replies[fmt.Sprintf("pong: m%02d", i)], "reply to m%02d from its session's name", i)
		}
		require.NoError(t, r.stdin.Close())
		<-r.done
		assert.Equal(t, 0, r.cmd.ProcessState.ExitCode(), "stderr: %s", r.err.String())
	})

	// Claude Code drops a message identical to the previous one from the
	// same sender within 30 s (measured: the receiver logs "identical to the
	// previous message from this sender" while the sender's SendMessage
	// succeeds); a relay's courier is one sender, so the relay refuses the
	// repeat instead of reporting it queued.
	t.Run("relay refuses a repeat the session would drop", func(t *testing.T) {
		r := startRelay(t, env)
		require.Equal(t, "ready", r.next(t)["type"])
		r.write(t, map[string]any{"id": 1, "to": sessions[0].SessionID, "text": "twice"})
		r.write(t, map[string]any{"id": 2, "to": sessions[0].SessionID, "text": "twice"})
		answers, replies := map[float64]map[string]any{}, 0
		for len(answers) < 2 || replies < 1 {
			m := r.nextWithin(t, 120*time.Second)
			switch m["type"] {
			case "inbound":
				assert.Equal(t, "pong: twice", m["text"])
				replies++
			default:
				answers[m["id"].(float64)] = m
			}
		}
		assert.Equal(t, "receipt", answers[1]["type"], "%v", answers[1])
		assert.Equal(t, "refusal", answers[2]["type"], "%v", answers[2])
		assert.Equal(t, "delivery_failed", answers[2]["reason"])
		assert.Contains(t, answers[2]["detail"], "nothing was sent")
		require.NoError(t, r.stdin.Close())
		<-r.done
		assert.Equal(t, 1, replies, "one message, one reply")
	})

	t.Run("relay restarts a killed courier", func(t *testing.T) {
		r := startRelay(t, env)
		require.Equal(t, "ready", r.next(t)["type"])
		first := courierPIDs(t, r.cmd.Process.Pid)
		require.Len(t, first, 1, "one courier")
		const n = 10
		for i := range n {
			r.write(t, map[string]any{"id": i, "to": sessions[0].SessionID, "text": fmt.Sprintf("k%d", i)})
		}
		answers := map[float64]string{}
		killed := false
		for len(answers) < n {
			m := r.nextWithin(t, 120*time.Second)
			if m["type"] == "inbound" {
				continue
			}
			id := m["id"].(float64)
			_, dup := answers[id]
			require.False(t, dup, "one answer per send: %v", m)
			answers[id] = m["type"].(string)
			if !killed {
				// Mid-run: sends are still queued and one is under way.
				require.NoError(t, syscall.Kill(first[0], syscall.SIGKILL))
				killed = true
			}
		}
		for i := range n {
			assert.Contains(t, []string{"receipt", "refusal"}, answers[float64(i)], "send %d", i)
		}
		// The relay runs a new courier and sends on it.
		r.write(t, map[string]any{"id": "after", "to": sessions[1].SessionID, "text": "after the kill"})
		for {
			m := r.nextWithin(t, 120*time.Second)
			if m["type"] == "inbound" {
				continue
			}
			assert.Equal(t, "receipt", m["type"], "%v", m)
			break
		}
		now := courierPIDs(t, r.cmd.Process.Pid)
		require.Len(t, now, 1)
		assert.NotEqual(t, first[0], now[0], "a new courier process")
		require.NoError(t, r.stdin.Close())
		<-r.done
		assert.Equal(t, 0, r.cmd.ProcessState.ExitCode(), "stderr: %s", r.err.String())
		requireNoCourierLeft(t, bin)
	})
}

// courierPIDs returns the live children of pid (the relay's couriers).
// isGroupGuard says whether pid is the guard procgroup puts beside every
// process group it starts (a /bin/sh that ends the group when peerctl dies),
// which is no courier.
func isGroupGuard(pid int) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(cmdline), "read x; kill -KILL 0")
}

func courierPIDs(t *testing.T, pid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(pid) && !isGroupGuard(child) {
			out = append(out, child)
		}
	}
	return out
}
