//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// liveIDs runs `peerctl list --json` against s's config dir and returns the
// session ids it lists, sorted.
func liveIDs(t *testing.T, s *livecc.Session) []string {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: s.Env()}, "list", "--json")
	require.Equal(t, 0, r.Code, "list: %s", r.Stderr)
	var rows []struct {
		SessionID string `json:"sessionId"`
		PID       int    `json:"pid"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &rows), "list --json: %s", r.Stdout)
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		ids = append(ids, row.SessionID)
	}
	sort.Strings(ids)
	return ids
}

// agentIDs returns the session ids `claude agents --json` lists, sorted.
func agentIDs(t *testing.T, bin string, s *livecc.Session) []string {
	t.Helper()
	var ids []string
	for _, a := range livecc.Agents(t, bin, s.ConfigDir) {
		ids = append(ids, a.SessionID)
	}
	sort.Strings(ids)
	return ids
}

// Issue 2: with two live sessions our live set is Claude Code's own; after one
// is SIGKILLed (its record stays on disk) both still agree and it is gone.
func TestLiveListAgreesWithClaudeAgents(t *testing.T) {
	bin := livecc.Require(t, livecc.DefaultVersion)
	root := livecc.NewRoot(t)
	a := livecc.Start(t, bin, livecc.Options{Root: root, Label: "a"})
	b := livecc.Start(t, bin, livecc.Options{Root: root, Label: "b", Name: "build:main 50% ünï"})

	both := []string{a.SessionID, b.SessionID}
	sort.Strings(both)
	assert.Equal(t, both, liveIDs(t, a), "peerctl list")
	assert.Equal(t, both, agentIDs(t, bin, a), "claude agents")

	b.Crash()
	_, err := os.Stat(b.RecordPath())
	require.NoError(t, err, "a SIGKILLed session leaves its record behind")
	assert.Equal(t, []string{a.SessionID}, liveIDs(t, a), "peerctl list after the crash")
	assert.Equal(t, []string{a.SessionID}, agentIDs(t, bin, a), "claude agents after the crash")

	// The stale record is explained, not hidden, by list --all.
	r := runPeerctl(t, runOpts{Env: a.Env()}, "list", "--all", "--json")
	require.Equal(t, 0, r.Code, "list --all: %s", r.Stderr)
	var rows []struct {
		SessionID, Verdict string
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &rows))
	verdicts := map[string]string{}
	for _, row := range rows {
		verdicts[row.SessionID] = row.Verdict
	}
	assert.Equal(t, "live", verdicts[a.SessionID])
	assert.Equal(t, "stale", verdicts[b.SessionID])
}

// Issue 2: a socket send exits 0 and the exact text reaches the target's
// transcript within 10 s.
func TestLiveSocketSendReachesTranscript(t *testing.T) {
	bin := livecc.Require(t, livecc.DefaultVersion)
	// Without a key the session settles at once and takes posts (FACTS).
	s := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	text := fmt.Sprintf("peerctl live check %d: the API changed, rebase", time.Now().UnixNano())

	r := runPeerctl(t, runOpts{Env: s.Env()}, "send", "--transport", "socket", s.SessionID, text)
	require.Equal(t, 0, r.Code, "send: stdout %s\nstderr %s", r.Stdout, r.Stderr)
	line := s.WaitTranscript(t, text, 60*time.Second)
	assert.Contains(t, line, `"content":`+mustJSON(t, text))
}
