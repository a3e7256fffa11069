package acceptance

// A session stopped on its user (a dialog, a permission prompt): its
// record says "status":"waiting" beside "waitingFor", as Claude Code
// writes it (test/fakesession's "waiting" command writes that shape).

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type listedSession struct {
	PID        int    `json:"pid"`
	Status     string `json:"status"`
	WaitingFor string `json:"waitingFor"`
}

// listedStatus is the status and waitingFor `list --json` gives pid.
func listedStatus(t *testing.T, env []string, pid int) listedSession {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env}, "list", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got []listedSession
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	for _, s := range got {
		if s.PID == pid {
			return s
		}
	}
	t.Fatalf("pid %d not listed: %s", pid, r.Stdout)
	return listedSession{}
}

// list, show and watch, as JSON and as text, say waiting and on what;
// back to idle, waitingFor is gone.
func TestWaitingSessionIsListedWaiting(t *testing.T) {
	cfg := t.TempDir()
	env := configEnv(t, cfg)
	f := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "asks")
	w := startWatch(t, env)
	w.next(t, f.pid, "start")

	f.say(t, "waiting dialog open")
	ev := w.next(t, f.pid, "the dialog opened")
	assert.Equal(t, "status", ev.Event)
	assert.Equal(t, "idle", ev.PreviousStatus)
	assert.Equal(t, "waiting", ev.Status)
	assert.Equal(t, "dialog open", ev.WaitingFor)

	assert.Equal(t, listedSession{PID: f.pid, Status: "waiting", WaitingFor: "dialog open"}, listedStatus(t, env, f.pid))
	r := runPeerctl(t, runOpts{Env: env}, "list")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "waiting (dialog open)")
	r = runPeerctl(t, runOpts{Env: env}, "show", "asks")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Regexp(t, `(?m)^status:\s+waiting \(dialog open\)$`, string(r.Stdout))
	r = runPeerctl(t, runOpts{Env: env}, "show", "--json", "asks")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var shown listedSession
	require.NoError(t, json.Unmarshal(r.Stdout, &shown))
	assert.Equal(t, listedSession{PID: f.pid, Status: "waiting", WaitingFor: "dialog open"}, shown)

	f.say(t, "status idle")
	ev = w.next(t, f.pid, "the dialog closed")
	assert.Equal(t, "idle", ev.Status)
	assert.Empty(t, ev.WaitingFor)
	assert.Equal(t, listedSession{PID: f.pid, Status: "idle"}, listedStatus(t, env, f.pid))
}
