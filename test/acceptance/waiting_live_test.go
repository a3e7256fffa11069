//go:build linux

package acceptance

// Live (PEERCTL_LIVE=1): a real Claude Code session with a dialog open
// (its /config panel) writes "status":"waiting" with "waitingFor" (2.1.332:
// "dialog open"), and list shows it waiting, on what.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

func TestLiveDialogIsListedWaiting(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	s := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	s.Type("/config")
	time.Sleep(time.Second) // the command menu settles before Enter picks the command
	s.Keys("Enter")
	var rec map[string]any
	ok := waitFor(60*time.Second, func() bool {
		rec = s.Record()
		return rec["status"] == "waiting"
	})
	require.True(t, ok, "the record never said waiting: %v\nscreen:\n%s", rec, s.Screen())
	t.Logf("record while the dialog is open: status %v, waitingFor %v", rec["status"], rec["waitingFor"])
	want, _ := rec["waitingFor"].(string)
	require.NotEmpty(t, want, "waitingFor beside waiting: %v", rec)
	got := listedStatus(t, configEnv(t, s.ConfigDir), s.PID)
	assert.Equal(t, "waiting", got.Status)
	assert.Equal(t, want, got.WaitingFor)
	r := runPeerctl(t, runOpts{Env: configEnv(t, s.ConfigDir)}, "list")
	assert.Contains(t, string(r.Stdout), "waiting ("+want+")")

}
