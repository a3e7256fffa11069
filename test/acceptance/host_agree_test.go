//go:build linux

package acceptance

// A far side's answer agrees with the call, and an interrupted send reads
// as the far side says (issue 41): the far side here is a script on the
// PATH the fake ssh's shell sees, which answers as told.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostAnswerForAnotherSession: a far receipt for another session
// than the full id asked for is outcome_unknown (exit 12) naming both; a
// far show document for another session is host_unreachable (exit 10).
func TestHostAnswerForAnotherSession(t *testing.T) {
	w := newHostWorld(t)
	const other = "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	receipt := `{"ok":true,"outcome":"posted","transport":"socket","harness":"claude-code","sessionId":"` + other + `","pid":7,"name":"other","endpoint":"","elapsedMs":1,"transportMs":1,"confirmed":false,"confirmMs":0}`
	show := `{"host":"","harness":"claude-code","sessionId":"` + other + `","pid":7,"name":"other","nameSource":"","cwd":"","status":"idle","kind":"interactive","version":"","startedAt":"","socketPath":"","endpoint":"","addressable":false,"verdict":"live","reason":"","file":"7.json","updatedAt":"","procStart":"","pidDomain":"","tmux":"","peerProtocol":0,"socketOnDisk":"unknown","transcript":"","transcriptExists":false,"path":"/x/7.json"}`
	path := scriptedFar(t, "case \"$2\" in\nsend) head -c 5 >/dev/null; echo '"+receipt+"' ;;\nshow) echo '"+show+"' ;;\nesac\n")

	r := w.run(t, nil, []string{path}, "send", "--host", "box", w.id, "hello")
	assert.Equal(t, 12, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl: outcome_unknown: ")
	assert.Contains(t, string(r.Stderr), "session "+other)
	assert.Contains(t, string(r.Stderr), w.id)
	assert.NotContains(t, string(r.Stdout), "posted")

	r = w.run(t, nil, []string{path}, "show", "--host", "box", w.id)
	assert.Equal(t, 10, r.Code, "stderr %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "session "+other)
	assert.Contains(t, string(r.Stderr), w.id)
}

// TestHostSendInterruptedAwaitingTheReply: Ctrl-C while the far side,
// which has delivered the text, awaits the reply: the far peerctl is told
// its caller is gone (its stdin ends), prints its receipt (delivered,
// no_reply), and that is what send --host says, with its exit code (9),
// as a send interrupted here does; not outcome_unknown.
func TestHostSendInterruptedAwaitingTheReply(t *testing.T) {
	w := newHostWorld(t)
	marker := filepath.Join(t.TempDir(), "delivered")
	receipt := `{"ok":false,"outcome":"delivered","transport":"courier","harness":"claude-code","sessionId":"` + w.id + `","pid":7,"name":"inbox","endpoint":"","elapsedMs":1,"transportMs":1,"confirmed":false,"confirmMs":0,` +
		`"refusal":{"reason":"no_reply","detail":"the message was handed over (delivered, msg_id m1) but the wait was interrupted before a reply came","exitCode":9}}`
	path := scriptedFar(t, "head -c 5 >/dev/null\n: > '"+marker+"'\ncat >/dev/null\necho '"+receipt+"'\nexit 9\n")
	s := startPeerctl(t, w.env(t, path), "send", "--host", "box", "--await-reply=10m", "--json", w.id, "hello")
	require.True(t, waitFor(60*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }), "the far side never had the text; stderr: %s", s.err.String())
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 9, s.ended(t, 60*time.Second), "stderr: %s", s.err.String())
	var got struct {
		OK      bool   `json:"ok"`
		Host    string `json:"host"`
		Outcome string `json:"outcome"`
		Refusal struct {
			Reason, Detail string
		} `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.out.String()), &got), "stdout: %s", s.out.String())
	assert.Equal(t, "box", got.Host)
	assert.Equal(t, "delivered", got.Outcome)
	assert.Equal(t, "no_reply", got.Refusal.Reason)
	assert.True(t, strings.HasSuffix(got.Refusal.Detail, "the wait was interrupted before a reply came"), got.Refusal.Detail)
	assert.NotContains(t, s.err.String(), "outcome_unknown")
}
