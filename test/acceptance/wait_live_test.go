//go:build linux

package acceptance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecodex"
	"github.com/peerctl/peerctl/test/liveopencode"
)

// waited is what a send --wait --json receipt says of its wait.
type waited struct {
	OK   bool `json:"ok"`
	Wait *struct {
		End    string `json:"end"`
		Status string `json:"status"`
	} `json:"wait"`
}

func sendWaiting(t *testing.T, env []string, wait time.Duration, to, text string) (waited, result) {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env, Timeout: wait + 2*time.Minute}, "send", "--json", "--wait="+wait.String(), to, text)
	var out waited
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	return out, r
}

// send --wait to a real Codex thread ends when the turn on the message has
// ended (the stand-in's answer is in the rollout by then), and a turn held
// by the stand-in is a wait_timeout (exit 11), not an early end.
func TestLiveCodexWait(t *testing.T) {
	bin := livecodex.Require(t)
	root := livecodex.NewRoot(t, bin, nil)
	a := livecodex.Start(t, root, livecodex.Options{Label: "a", Prompt: "ping first"})
	a.WaitRollout(t, "the first answer", codexTurn, hasAgentMessage("pong: ping first"))
	env := root.Env()

	probe := fmt.Sprintf("ping wait-%d", time.Now().UnixNano())
	out, r := sendWaiting(t, env, codexTurn, a.ThreadID, probe)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	require.NotNil(t, out.Wait, "stdout: %s", r.Stdout)
	assert.Equal(t, "idle", out.Wait.End)
	a.WaitRollout(t, "the waited turn's answer", codexTurn, hasAgentMessage("pong: "+probe))

	out, r = sendWaiting(t, env, 3*time.Second, a.ThreadID, "hold waited")
	root.Model.Release("waited")
	assert.Equal(t, 11, r.Code, "stderr: %s", r.Stderr)
	require.NotNil(t, out.Wait, "stdout: %s", r.Stdout)
	assert.Equal(t, "timeout", out.Wait.End)
}

// send --wait to a real opencode session ends when the turn on the message
// has ended: the stand-in's answer to it is in the session by then.
func TestLiveOpencodeWait(t *testing.T) {
	bin := liveopencode.Require(t)
	peerctlBin(t)
	root := liveopencode.NewRoot(t, bin)
	env := root.Env()
	srv := root.Serve(t, root.Workdir(t, "serve"))
	sid := liveopencode.NewSession(t, srv.URL)

	word := fmt.Sprintf("wait-%d", time.Now().UnixNano())
	out, r := sendWaiting(t, env, opencodeTurn, sid, word)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	require.NotNil(t, out.Wait, "stdout: %s", r.Stdout)
	assert.Equal(t, "idle", out.Wait.End)
	var user string
	for _, m := range liveopencode.Messages(t, srv.URL, sid) {
		if m.Role == "user" && len(m.Texts) == 2 && m.Texts[1] == word {
			user = m.ID
		}
	}
	require.NotEmpty(t, user)
	assert.True(t, answered(liveopencode.Messages(t, srv.URL, sid), user), "the turn had ended, its answer written")
}
