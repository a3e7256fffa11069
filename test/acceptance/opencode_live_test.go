//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livecodex"
	"github.com/peerctl/peerctl/test/liveopencode"
	"github.com/peerctl/peerctl/test/liveqwen"
)

// opencodeTurn bounds the wait for a turn of a live opencode session
// (measured on a loaded 2-CPU machine: a first turn about 30 s).
const opencodeTurn = 120 * time.Second

// opencodeListed is one entry of `list --json` as the opencode tests read it.
type opencodeListed struct {
	Harness       string `json:"harness"`
	SessionID     string `json:"sessionId"`
	PID           int    `json:"pid"`
	Cwd           string `json:"cwd"`
	Kind          string `json:"kind"`
	Verdict       string `json:"verdict"`
	Endpoint      string `json:"endpoint"`
	Addressable   bool   `json:"addressable"`
	Unaddressable string `json:"unaddressable"`
	Reason        string `json:"reason"`
	SocketPath    string `json:"socketPath"`
}

func listOpencode(t *testing.T, env []string, args ...string) []opencodeListed {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env}, append([]string{"list", "--json", "--harness", "opencode"}, args...)...)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var out []opencodeListed
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
	return out
}

// byPID are the listed entries of process pid.
func byPID(list []opencodeListed, pid int) []opencodeListed {
	var out []opencodeListed
	for _, l := range list {
		if l.PID == pid {
			out = append(out, l)
		}
	}
	return out
}

// TestLiveOpencode runs peerctl against real opencode-ai 1.18.33 offline
// (issue 31), its model the Go stand-in: a serve session is listed and a
// send is delivered, byte-exact in the session's messages; --await-reply
// prints the stand-in's answer; `peerctl whoami` run by opencode's bash
// tool (a call the stand-in scripts) names its session; a --port TUI shows the injected turn on
// screen; a plain TUI is listed live but not addressable, with the fix; a
// killed server is gone from the next list. One root and one server
// serve the subtests; the TUIs start right after the server, as they draw
// slowly.
func TestLiveOpencode(t *testing.T) {
	bin := liveopencode.Require(t)
	peerctlBin(t) // built first: a race build on a loaded machine must not eat a run's timeout
	root := liveopencode.NewRoot(t, bin)
	env := root.Env()
	// The server first (the first start of a home sets up its database),
	// then the TUIs, which draw slowly while the serve subtests run.
	srv := root.Serve(t, root.Workdir(t, "serve"))
	plain := root.StartTUI(t, root.Workdir(t, "plain"))
	ported := root.StartTUI(t, root.Workdir(t, "ported"), "--port", "0")
	sid := liveopencode.NewSession(t, srv.URL)

	t.Run("a serve session is listed", func(t *testing.T) {
		got := byPID(listOpencode(t, env), srv.PID)
		require.Len(t, got, 1, "%+v", got)
		l := got[0]
		assert.Equal(t, sid, l.SessionID)
		assert.Equal(t, "opencode", l.Harness)
		assert.Equal(t, srv.Cwd, l.Cwd)
		assert.Equal(t, "live", l.Verdict)
		assert.Equal(t, "serve", l.Kind)
		assert.True(t, l.Addressable, l.Unaddressable)
		assert.Equal(t, strings.TrimPrefix(srv.URL, "http://"), l.SocketPath)
		assert.True(t, strings.HasPrefix(l.Endpoint, "opencode-peer:v1:"), l.Endpoint)
	})

	t.Run("send is delivered, byte-exact in the session's messages", func(t *testing.T) {
		text := fmt.Sprintf("peerctl live opencode %d: \"quoted\" $HOME `tick` ünï\n\ttabbed line", time.Now().UnixNano())
		out, r := sendCodex(t, env, "--confirm-timeout=90s", "--from", "tester", sid, text)
		require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		assert.Equal(t, "delivered", out.Outcome, out.Detail)
		assert.Equal(t, "opencode", out.Harness)
		assert.Equal(t, "prompt", out.Transport)
		var user liveopencode.Message
		for _, m := range liveopencode.Messages(t, srv.URL, sid) {
			if m.Role == "user" && len(m.Texts) == 2 && m.Texts[1] == text {
				user = m
			}
		}
		require.NotEmpty(t, user.ID, "no user message carries the text byte for byte")
		assert.Equal(t, "[peerctl: a message from another session, from \"tester\"]\n", user.Texts[0])
		// The turn runs to its answer (the stand-in's), before the next
		// subtest sends again.
		deadline := time.Now().Add(opencodeTurn)
		for !answered(liveopencode.Messages(t, srv.URL, sid), user.ID) {
			require.True(t, time.Now().Before(deadline), "no answer to %s in %s", user.ID, opencodeTurn)
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("--await-reply prints the stand-in's answer", func(t *testing.T) {
		word := fmt.Sprintf("reply-%d", time.Now().UnixNano())
		r := runPeerctl(t, runOpts{Env: env, Timeout: 3 * time.Minute}, "send", "--json", "--await-reply="+opencodeTurn.String(), sid, word)
		require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		var out codexSent
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "%s", r.Stdout)
		assert.True(t, strings.HasPrefix(out.Reply.Text, "pong: "), "%q", out.Reply.Text)
		assert.True(t, strings.HasSuffix(out.Reply.Text, word), "%q", out.Reply.Text)
	})

	t.Run("whoami in the shell of an opencode tool names its session", func(t *testing.T) {
		// A root of its own: the model may call tools and bash runs
		// unasked there; peerctl is first on the server's PATH.
		sroot := liveopencode.NewRoot(t, bin)
		sroot.AllowShell(t)
		senv := sroot.Env()
		path := "PATH=" + filepath.Dir(peerctlBin(t))
		for _, kv := range senv {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path += string(filepath.ListSeparator) + v
			}
		}
		ssrv := sroot.Serve(t, sroot.Workdir(t, "shell"), path)
		ssid := liveopencode.NewSession(t, ssrv.URL)
		body := opencode.PromptBody(opencode.NewMessageID(time.Now()),
			liveopencode.ShellPrefix+`echo "OPENCODE=$OPENCODE OPENCODE_PID=$OPENCODE_PID"; peerctl whoami --json`)
		resp, err := liveopencode.HTTP.Post(ssrv.URL+"/session/"+ssid+"/prompt_async", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		var said string
		deadline := time.Now().Add(opencodeTurn)
		for said == "" {
			for _, m := range liveopencode.Messages(t, ssrv.URL, ssid) {
				for _, text := range m.Texts {
					if m.Role == "assistant" && strings.HasPrefix(text, liveopencode.ToolAnswer("")) {
						said = text
					}
				}
			}
			require.True(t, said != "" || time.Now().Before(deadline), "no answer to the tool's result in %s; messages: %+v", opencodeTurn, liveopencode.Messages(t, ssrv.URL, ssid))
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("the tool's result: %s", said)
		assert.Contains(t, said, fmt.Sprintf("OPENCODE=1 OPENCODE_PID=%d", ssrv.PID))
		start, end := strings.Index(said, "{"), strings.LastIndex(said, "}")
		require.True(t, start >= 0 && end > start, "no JSON in %q", said)
		var self struct {
			SessionID string `json:"sessionId"`
			Harness   string `json:"harness"`
			PID       int    `json:"pid"`
			Via       string `json:"via"`
		}
		require.NoError(t, json.Unmarshal([]byte(said[start:end+1]), &self), "%q", said)
		assert.Equal(t, ssid, self.SessionID)
		assert.Equal(t, "opencode", self.Harness)
		assert.Equal(t, ssrv.PID, self.PID)
		assert.Equal(t, "env", self.Via, "named by $OPENCODE_PID")
	})

	t.Run("a plain TUI is listed, not addressable, with the fix", func(t *testing.T) {
		got := byPID(listOpencode(t, env, "--all"), plain.PID)
		require.Len(t, got, 1, "%+v", got)
		assert.Equal(t, "live", got[0].Verdict)
		assert.False(t, got[0].Addressable)
		assert.Contains(t, got[0].Unaddressable, "opencode --port 0")
		assert.Contains(t, got[0].Unaddressable, "opencode attach")
		assert.Empty(t, got[0].Endpoint, "no endpoint")
	})

	t.Run("a send to a plain TUI is refused naming it, never by an empty id", func(t *testing.T) {
		got := byPID(listOpencode(t, env, "--all"), plain.PID)
		require.Len(t, got, 1, "%+v", got)
		r := runPeerctl(t, runOpts{Env: env}, "send", "--json", "opencode TUI in plain", "hi")
		var out codexSent
		require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		assert.Equal(t, "not_addressable", out.Refusal.Reason, out.Refusal.Detail)
		assert.NotContains(t, out.Refusal.Detail, "session  ", "an empty session id")
		assert.NotContains(t, out.Refusal.Detail, "session (", "an empty session id")
		assert.Contains(t, out.Refusal.Detail, fmt.Sprintf("pid %d", plain.PID))
		assert.Contains(t, out.Refusal.Detail, "opencode --port 0", "the fix")
	})

	t.Run("a --port TUI shows the injected turn", func(t *testing.T) {
		url := ported.Listening(liveopencode.StartTimeout)
		liveopencode.WaitHealthy(t, url)
		ported.WaitScreen("the TUI drawn", liveopencode.StartTimeout, func(s string) bool { return strings.TrimSpace(s) != "" })
		tid := liveopencode.NewSession(t, url)
		selectSession(t, url, tid)
		var listed bool
		for _, l := range byPID(listOpencode(t, env), ported.PID) {
			listed = listed || l.SessionID == tid && l.Addressable && l.Kind == "tui"
		}
		require.True(t, listed, "the --port TUI's session is listed addressable")
		word := fmt.Sprintf("injected%d", time.Now().UnixNano()%1e9)
		// A fresh TUI's first turn is slow on a loaded machine: its
		// message.updated came after send's default 5 s once.
		out, r := sendCodex(t, env, "--confirm-timeout=90s", tid, word)
		require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		assert.Equal(t, "delivered", out.Outcome, out.Detail)
		assert.Contains(t, out.Detail, opencode.Unwatched, "which session a TUI shows cannot be read: the receipt says so")
		ported.WaitScreen("the injected turn", opencodeTurn, func(s string) bool { return strings.Contains(s, word) })
	})

	t.Run("a killed server is gone from the next list", func(t *testing.T) {
		other := root.Serve(t, root.Workdir(t, "killed"))
		liveopencode.NewSession(t, other.URL)
		require.NotEmpty(t, byPID(listOpencode(t, env), other.PID))
		other.Kill() // SIGKILL, and reaped: its port and its /proc entry are gone
		assert.Empty(t, byPID(listOpencode(t, env, "--all"), other.PID), "listed after SIGKILL")
	})
}

// answered reports whether an assistant message answering id (parentID)
// has text.
func answered(msgs []liveopencode.Message, id string) bool {
	for _, m := range msgs {
		if m.Role == "assistant" && m.ParentID == id && len(m.Texts) > 0 {
			return true
		}
	}
	return false
}

// selectSession makes the TUI behind url show session id (POST
// /tui/select-session, opencode-ai 1.18.33).
func selectSession(t *testing.T, url, id string) {
	t.Helper()
	resp, err := liveopencode.HTTP.Post(url+"/tui/select-session", "application/json", strings.NewReader(`{"sessionID":"`+id+`"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestLiveOpencodeFourHarnesses: one `list` holds a Claude Code, a Qwen
// Code, a Codex and an opencode session, each under its harness.
func TestLiveOpencodeFourHarnesses(t *testing.T) {
	obin := liveopencode.Require(t)
	peerctlBin(t)
	cbin := livecodex.Require(t)
	ccBin := livecc.Require(t, livecc.Version())
	qBin := liveqwen.Require(t, liveqwen.Version())
	oroot := liveopencode.NewRoot(t, obin)
	srv := oroot.Serve(t, oroot.Workdir(t, "o"))
	sid := liveopencode.NewSession(t, srv.URL)
	cc := livecc.Start(t, ccBin, livecc.Options{NoAPIKey: true})
	qroot := liveqwen.NewRoot(t)
	qroot.Settings(t, `{"agents":{"crossSessionInbound":"accept"}}`)
	q := liveqwen.Start(t, qBin, qroot, liveqwen.Options{Label: "q"})
	root := livecodex.NewRoot(t, cbin, nil)
	x := livecodex.Start(t, root, livecodex.Options{Label: "x"})

	env := root.Env("CLAUDE_CONFIG_DIR="+cc.ConfigDir, "QWEN_HOME="+qroot.QwenHome, "XDG_DATA_HOME="+oroot.DataHome)
	r := runPeerctl(t, runOpts{Env: env}, "list", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var list []opencodeListed
	require.NoError(t, json.Unmarshal(r.Stdout, &list), "%s", r.Stdout)
	got := map[string]string{}
	for _, l := range list {
		got[l.SessionID] = l.Harness
	}
	assert.Equal(t, "claude-code", got[cc.SessionID], "%+v\nstderr: %s", list, r.Stderr)
	assert.Equal(t, "qwen-code", got[q.SessionID], "%+v\nstderr: %s", list, r.Stderr)
	assert.Equal(t, "codex", got[x.ThreadID], "%+v\nstderr: %s", list, r.Stderr)
	assert.Equal(t, "opencode", got[sid], "%+v\nstderr: %s", list, r.Stderr)
}
