//go:build unix

package acceptance

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// KnownNewestClaudeCode is the newest Claude Code release the npm registry
// served when this matrix was last updated; the matrix uses it when `make
// deps` could not ask npm.
const KnownNewestClaudeCode = "2.1.332"

// newestClaudeCode is the newest @anthropic-ai/claude-code release as `make
// deps` found it on npm (livecc.Newest; the test runs offline and asks no
// registry), else KnownNewestClaudeCode; it says which it used.
func newestClaudeCode(t *testing.T) string {
	t.Helper()
	if v := livecc.Newest(); v != "" {
		t.Logf("version matrix: newest = %s (npm, when make deps ran)", v)
		return v
	}
	t.Logf("version matrix: make deps recorded no newest release; newest = pinned %s", KnownNewestClaudeCode)
	return KnownNewestClaudeCode
}

// TestMatrixLive runs real Claude Code sessions of three releases — 2.1.224
// (no inbox socket), 2.1.328 and the newest on npm (newestClaudeCode) — and checks for each
// that `peerctl list --json` lists exactly the sessions `claude agents
// --json` lists (same CLAUDE_CONFIG_DIR), and that addressability is right:
// a release without a socket is refused not_addressable (exit 7) before any
// transport runs; a release with one receives a socket post, which shows in
// the target's transcript within 10 s. Gated by PEERCTL_LIVE=1 (livecc).
func TestMatrixLive(t *testing.T) {
	if !livecc.Enabled() {
		t.Skip("live Claude Code test: set PEERCTL_LIVE=1 to run it (needs tmux, npm and the npm registry)")
	}
	matrix := []struct {
		version string
		socket  bool
	}{
		{"2.1.224", false},
		{"2.1.328", true},
	}
	if newest := newestClaudeCode(t); newest != "2.1.328" && newest != "2.1.224" {
		matrix = append(matrix, struct {
			version string
			socket  bool
		}{newest, true})
	}
	for _, m := range matrix {
		t.Run(m.version, func(t *testing.T) {
			bin := livecc.Require(t, m.version)
			root := livecc.NewRoot(t)
			opts := livecc.Options{Root: root, WaitSettled: true, StartTimeout: 90 * time.Second}
			a := livecc.Start(t, bin, withLabel(opts, "a", ""))
			b := livecc.Start(t, bin, withLabel(opts, "b", "matrix:b 50% ü"))
			env := livecc.Env(a.ConfigDir, "HOME="+t.TempDir())

			// The live set agrees with Claude Code's own listing.
			agents := livecc.Agents(t, bin, a.ConfigDir)
			r := runPeerctl(t, runOpts{Env: env}, "list", "--json")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			var listed []catListEntry
			require.NoError(t, json.Unmarshal(r.Stdout, &listed))
			var want, got []string
			for _, ag := range agents {
				want = append(want, matrixKey(ag.PID, ag.SessionID, ag.Name))
			}
			for _, e := range listed {
				got = append(got, matrixKey(e.PID, e.SessionID, e.Name))
			}
			sort.Strings(want)
			sort.Strings(got)
			assert.Equal(t, want, got, "peerctl list vs claude agents (%s)", m.version)
			var ids []string
			for _, e := range listed {
				ids = append(ids, strconv.Itoa(e.PID)+" "+e.SessionID)
			}
			assert.ElementsMatch(t, []string{strconv.Itoa(a.PID) + " " + a.SessionID, strconv.Itoa(b.PID) + " " + b.SessionID}, ids)

			byID := map[string]catListEntry{}
			for _, e := range listed {
				byID[e.SessionID] = e
			}
			eb := byID[b.SessionID]
			if !m.socket {
				for _, e := range listed {
					assert.False(t, e.Addressable, "%s publishes no socket", m.version)
					assert.Contains(t, e.Unaddressable, "messagingSocketPath")
				}
				// A courier that cannot run proves the refusal came first.
				r := runPeerctl(t, runOpts{Env: env}, "send", "--claude", "/nonexistent/claude", b.SessionID, "hello")
				assert.Equal(t, 7, r.Code, "stderr: %s", r.Stderr)
				assert.Contains(t, string(r.Stderr), "not_addressable")
				return
			}
			require.True(t, eb.Addressable, "unaddressable: %s", eb.Unaddressable)
			require.NotEmpty(t, eb.Endpoint)
			text := "peerctl-matrix-" + m.version + "-" + matrixNonce(t)
			r = runPeerctl(t, runOpts{Env: env}, "send", "--transport", "socket", "--json", "--timeout", "30s", eb.Endpoint, text)
			require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			var receipt struct {
				OK        bool   `json:"ok"`
				Outcome   string `json:"outcome"`
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(r.Stdout, &receipt))
			assert.True(t, receipt.OK)
			// "posted", or "delivered" when peerctl saw the text in the transcript itself.
			assert.Contains(t, []string{"posted", "delivered"}, receipt.Outcome)
			t.Logf("%s send outcome: %s", m.version, receipt.Outcome)
			assert.Equal(t, b.SessionID, receipt.SessionID)
			line := b.WaitTranscript(t, text, 60*time.Second)
			t.Logf("%s transcript: %.200s", m.version, line)
			if raw, err := os.ReadFile(a.TranscriptPath()); err == nil {
				assert.NotContains(t, string(raw), text, "the other session must not get the text")
			}
		})
	}
}

func withLabel(o livecc.Options, label, name string) livecc.Options {
	o.Label, o.Name = label, name
	return o
}

func matrixKey(pid int, sessionID, name string) string {
	return strings.Join([]string{strconv.Itoa(pid), sessionID, name}, " | ")
}

func matrixNonce(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
