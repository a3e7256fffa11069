//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/liveqwen"
)

type qwenListed struct {
	Harness       string `json:"harness"`
	SessionID     string `json:"sessionId"`
	PID           int    `json:"pid"`
	Endpoint      string `json:"endpoint"`
	Addressable   bool   `json:"addressable"`
	Unaddressable string `json:"unaddressable"`
	Verdict       string `json:"verdict"`
	Reason        string `json:"reason"`
	File          string `json:"file"`
	Version       string `json:"version"`
}

type qwenSent struct {
	OK        bool   `json:"ok"`
	Outcome   string `json:"outcome"`
	Transport string `json:"transport"`
	Harness   string `json:"harness"`
	Confirmed bool   `json:"confirmed"`
	Refusal   struct {
		Reason       string `json:"reason"`
		Status       string `json:"status"`
		StatusReason string `json:"statusReason"`
		ExitCode     int    `json:"exitCode"`
	} `json:"refusal"`
}

// TestLiveQwenCode runs real Qwen Code sessions offline (issue 14): a
// 0.24.4 TUI and a 0.23.0 one (messaging off by default) share one
// registry with a crafted schemaVersion 2 record. peerctl's live set is
// `qwen sessions ps --json`'s; a send is delivered by Qwen Code's receipt
// and shows in the chat transcript; a resend of the same text is dropped
// as a duplicate; agents.crossSessionInbound hold gives held and refuse
// gives exit 5 refused.
func TestLiveQwenCode(t *testing.T) {
	bin := liveqwen.Require(t, liveqwen.Version())
	old := liveqwen.Require(t, liveqwen.MessagingOffVersion)
	root := liveqwen.NewRoot(t)
	root.Settings(t, `{"agents":{"crossSessionInbound":"accept"}}`)
	a := liveqwen.Start(t, bin, root, liveqwen.Options{Label: "a"})
	b := liveqwen.Start(t, old, root, liveqwen.Options{Label: "b", NoIPC: true})

	// A record of a newer schema, for a process that is running (this
	// test): skipped by Qwen Code and by peerctl, and never deleted.
	newer := filepath.Join(root.QwenHome, "sessions", strconv.Itoa(os.Getpid())+".json")
	require.NoError(t, os.WriteFile(newer, []byte(fmt.Sprintf(`{"schemaVersion":2,"pid":%d,"sessionId":"00000000-0000-4000-8000-000000000002","cwd":"/","name":"future-00","startedAt":%d}`,
		os.Getpid(), time.Now().UnixMilli())), 0o600))

	env := root.Env()
	list := func(args ...string) []qwenListed {
		t.Helper()
		r := runPeerctl(t, runOpts{Env: env}, append([]string{"list", "--json", "--harness", "qwen-code"}, args...)...)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		var out []qwenListed
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
		return out
	}

	t.Run("the live set is qwen sessions ps --json's", func(t *testing.T) {
		ours := map[int]string{}
		for _, l := range list() {
			assert.Equal(t, "qwen-code", l.Harness)
			ours[l.PID] = l.SessionID
		}
		assert.Equal(t, liveqwen.PS(t, bin, root), ours)
		assert.Equal(t, map[int]string{a.PID: a.SessionID, b.PID: b.SessionID}, ours)
	})

	t.Run("0.23.0 is listed, not addressable, and says why", func(t *testing.T) {
		for _, l := range list() {
			if l.PID != b.PID {
				continue
			}
			assert.Equal(t, "0.23.0", l.Version)
			assert.False(t, l.Addressable)
			assert.Empty(t, l.Endpoint)
			assert.Contains(t, l.Unaddressable, "no ipcPath")
			assert.Contains(t, l.Unaddressable, "0.23.0 has it off by default")
			return
		}
		t.Fatalf("0.23.0 session %d not listed", b.PID)
	})

	t.Run("schemaVersion 2 is skipped and kept", func(t *testing.T) {
		found := false
		for _, l := range list("--all") {
			if l.File == filepath.Base(newer) {
				found = true
				assert.Equal(t, "unsupported", l.Verdict)
				assert.Contains(t, l.Reason, "schemaVersion 2")
			}
		}
		assert.True(t, found, "the record is shown with --all")
		_, err := os.Stat(newer)
		assert.NoError(t, err, "never deleted")
	})

	send := func(args ...string) (qwenSent, result) {
		t.Helper()
		r := runPeerctl(t, runOpts{Env: env}, append([]string{"send", "--json"}, args...)...)
		var out qwenSent
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		return out, r
	}
	var endpoint string
	for _, l := range list() {
		if l.PID == a.PID {
			endpoint = l.Endpoint
		}
	}
	require.True(t, strings.HasPrefix(endpoint, "qwen-peer:v1:"+strconv.Itoa(a.PID)+":"+a.SessionID+":"), endpoint)

	text := fmt.Sprintf("peerctl live qwen %d: the API changed, rebase", time.Now().UnixNano())
	t.Run("delivered by receipt, and in the transcript", func(t *testing.T) {
		out, r := send(endpoint, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "delivered", out.Outcome)
		assert.Equal(t, "inbox", out.Transport)
		assert.Equal(t, "qwen-code", out.Harness)
		assert.True(t, out.Confirmed)
		line := a.WaitTranscript(t, text, 60*time.Second)
		assert.Contains(t, line, "cross_session_message")
	})

	t.Run("the same text again is dropped as a duplicate", func(t *testing.T) {
		out, r := send(a.SessionID, text)
		assert.Equal(t, 5, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "delivery_failed", out.Refusal.Reason)
		assert.Equal(t, "dropped", out.Refusal.Status)
		assert.True(t, strings.HasPrefix(out.Refusal.StatusReason, "duplicate"), out.Refusal.StatusReason)
	})

	// send --await-reply: Qwen Code's receipt first, then the wait on
	// peerctl's reply inbox. The session's model sees the message as a
	// cross_session_message from that inbox; 0.24.4's send_message reaches
	// registry sessions only, so the model cannot answer it: no_reply, 9.
	t.Run("await-reply is delivered, seen by the model, and no_reply", func(t *testing.T) {
		asked := fmt.Sprintf("peerctl live qwen %d: which branch are you on?", time.Now().UnixNano())
		out, r := send("--await-reply=5s", a.SessionID, asked)
		assert.Equal(t, 9, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "no_reply", out.Refusal.Reason)
		assert.Equal(t, "delivered", out.Outcome)
		assert.Equal(t, "inbox", out.Transport)
		deadline := time.Now().Add(60 * time.Second)
		for {
			for _, p := range a.Stub.Prompts() {
				if strings.Contains(p, asked) {
					assert.Contains(t, p, `<cross_session_message from="`)
					assert.Contains(t, p, `name="peerctl"`)
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the model never saw the message; prompts: %q", a.Stub.Prompts())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("a Claude Code transport refuses", func(t *testing.T) {
		out, r := send("--transport", "socket", a.SessionID, "not for you")
		assert.Equal(t, 6, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "harness_unsupported", out.Refusal.Reason)
	})

	// The setting hot-reloads: poll until the session applies it.
	policy := func(t *testing.T, mode, want string) (qwenSent, result) {
		root.Settings(t, `{"agents":{"crossSessionInbound":"`+mode+`"}}`)
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			out, r := send(a.SessionID, fmt.Sprintf("policy %s try %d", mode, i))
			got := out.Outcome
			if !out.OK {
				got = out.Refusal.Status
			}
			if got == want || time.Now().After(deadline) {
				return out, r
			}
			time.Sleep(time.Second)
		}
	}
	t.Run("hold gives held", func(t *testing.T) {
		out, r := policy(t, "hold", "held")
		assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "held", out.Outcome)
	})
	t.Run("refuse gives exit 5 refused", func(t *testing.T) {
		out, r := policy(t, "refuse", "refused")
		assert.Equal(t, 5, r.Code, "stderr: %s", r.Stderr)
		assert.Equal(t, "delivery_failed", out.Refusal.Reason)
		assert.Equal(t, "refused", out.Refusal.Status)
	})
}
