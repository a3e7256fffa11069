//go:build unix

package acceptance

import (
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// regOracleVersion is the Claude Code release whose own listing is the oracle.
const regOracleVersion = "2.1.328"

// TestLiveSetMatchesClaudeAgents is the differential test of issue 4: on a
// crafted registry of helper processes, the interactive records peerctl
// calls live are exactly the sessions `claude agents --json` lists for the
// same CLAUDE_CONFIG_DIR, except where we differ on purpose (each such case
// says why, and our verdict for it is checked).
func TestLiveSetMatchesClaudeAgents(t *testing.T) {
	claude := livecc.Require(t, regOracleVersion)
	reg := craftRegistry(t)
	require.GreaterOrEqual(t, len(reg.Cases), 12)

	ours := regListAll(t, reg.ConfigDir)
	agents := livecc.Agents(t, claude, reg.ConfigDir)

	key := func(sessionID string, pid int) string { return sessionID + "|" + strconv.Itoa(pid) }
	oracle := map[string]bool{}
	oracleByPID := map[int]bool{}
	for _, a := range agents {
		// It lists interactive sessions and (2.1.328) background ones, kind "bg".
		assert.Contains(t, []string{"interactive", "background"}, a.Kind, "claude agents listed %d", a.PID)
		oracle[key(a.SessionID, a.PID)] = true
		oracleByPID[a.PID] = true
	}
	oursByFile := map[string]regListed{}
	live := map[string]bool{}
	for _, l := range ours {
		oursByFile[l.File] = l
		if l.Verdict == "live" && l.Kind == "interactive" {
			live[key(l.SessionID, l.PID)] = true
		}
	}

	// Each crafted rule, as measured: what Claude Code lists, and our verdict.
	for _, c := range reg.Cases {
		t.Run(c.Label, func(t *testing.T) {
			if c.PID != 0 {
				assert.Equal(t, c.Oracle, oracleByPID[c.PID], "claude agents listing pid %d (%s)", c.PID, c.File)
			}
			l := oursByFile[c.File]
			assert.Equal(t, c.Verdict, l.Verdict, "our verdict for %s: %s", c.File, l.Reason)
			assert.Contains(t, l.Reason, c.Reason)
			if c.Divergence != "" {
				t.Logf("%s: we say %s, claude agents lists it: %v — %s", c.File, l.Verdict, c.Oracle, c.Divergence)
			}
		})
	}

	// The live sets, with the deliberate differences accounted for.
	want := map[string]bool{}
	for k := range live {
		want[k] = true
	}
	for _, c := range reg.Cases {
		if c.Divergence == "" {
			continue
		}
		k := key(c.SessionID, c.PID)
		switch {
		case c.Oracle && c.Verdict != "live": // stricter on purpose
			want[k] = true
		case !c.Oracle && c.Verdict == "live": // lenient on purpose
			delete(want, k)
		}
	}
	assert.Equal(t, regSorted(oracle), regSorted(want),
		"session ids and pids: claude agents --json vs peerctl list --all --json (live, interactive; deliberate differences applied)")
	// Names, as each side reads the same files.
	ourNames := map[string]string{}
	for _, l := range ours {
		if l.Verdict == "live" {
			ourNames[key(l.SessionID, l.PID)] = l.Name
		}
	}
	for _, a := range agents {
		if n, ok := ourNames[key(a.SessionID, a.PID)]; ok {
			assert.Equal(t, a.Name, n, "name of pid %d: claude agents --json vs peerctl", a.PID)
		}
	}
	assert.GreaterOrEqual(t, len(oracle), 6, "the oracle lists enough sessions for the comparison to mean something")
}

func regSorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
