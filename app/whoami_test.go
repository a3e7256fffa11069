package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// parents is a fake process tree: child -> parent.
type parents map[int]int

func (p parents) Parent(pid int) (int, error) {
	pp, ok := p[pid]
	if !ok {
		return 0, errors.New("no such process")
	}
	return pp, nil
}

func liveEntry(pid int, id, socket string) domain.Entry {
	return domain.Entry{Verdict: domain.VerdictLive, Addressable: true,
		Record: domain.Record{PID: pid, SessionID: id, Name: "n" + id, SocketPath: socket, File: "x.json"}}
}

func TestWhoamiRules(t *testing.T) {
	a := liveEntry(100, "a", "/s/100.sock")
	b := liveEntry(200, "b", "/s/200.sock")
	staleC := liveEntry(300, "c", "/s/300.sock")
	staleC.Verdict = domain.VerdictStale
	l := Listing{Dir: "/cfg/sessions", Entries: []domain.Entry{a, b, staleC}}
	tree := parents{10: 11, 11: 100, 100: 1, 1: 0, 20: 300, 300: 1, 30: 30, 40: 41}

	tests := []struct {
		name      string
		self      int
		env       string
		wantID    string
		wantVia   Via
		wantChain []int
		wantNotes []string
	}{
		{"socket variable wins over parents", 10, "/s/200.sock", "b", ViaSocketEnv, nil, nil},
		{"grandparent", 10, "", "a", ViaAncestor, []int{10, 11, 100}, nil},
		{"self", 100, "", "a", ViaAncestor, []int{100}, nil},
		{"unknown socket falls back to parents", 10, "/s/999.sock", "a", ViaAncestor, []int{10, 11, 100}, []string{"matches no live record"}},
		{"stale ancestor is not a session", 20, "", "", ViaNone, []int{20, 300, 1}, nil},
		{"stale socket is not a session", 20, "/s/300.sock", "", ViaNone, []int{20, 300, 1}, []string{"matches no live record"}},
		{"a process that is its own parent ends the walk", 30, "", "", ViaNone, []int{30}, nil},
		{"an unreadable parent ends the walk", 40, "", "", ViaNone, []int{40, 41}, []string{"no such process"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := whoami(l, tree, tt.self, socketEnv(tt.env))
			if tt.wantID == "" {
				r, ok := domain.AsRefusal(err)
				require.True(t, ok, "refusal, got %v", err)
				assert.Equal(t, domain.ReasonNotLive, r.Reason)
				assert.Contains(t, r.Detail, "not inside a session")
				for _, n := range tt.wantNotes {
					assert.Contains(t, r.Detail, n)
				}
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantID, got.Entry.Record.SessionID)
			}
			assert.Equal(t, tt.wantVia, got.Via)
			assert.Equal(t, tt.wantChain, got.Chain)
			for _, n := range tt.wantNotes {
				assert.Contains(t, got.Notes[0], n)
			}
		})
	}
}

func TestWhoamiWalkIsBounded(t *testing.T) {
	tree := parents{}
	for pid := 2; pid < 10*MaxAncestry; pid++ {
		tree[pid] = pid + 1
	}
	got, err := whoami(Listing{}, tree, 2, nil)
	require.Error(t, err)
	assert.Len(t, got.Chain, MaxAncestry)
	assert.Contains(t, err.Error(), "stopped after 128 parents", "a cut-off walk says so")
	assert.NotContains(t, err.Error(), "not inside a session", "a cut-off walk does not know that")
}

// socketEnv is Claude Code's session variable set to v (none when "").
func socketEnv(v string) []sessionEnv {
	if v == "" {
		return nil
	}
	return []sessionEnv{{of: domain.HarnessClaudeCode, env: (&claudecode.Harness{}).SessionEnv(), value: v}}
}

// A shell inside a Codex session runs in a sandbox of its own pid
// namespace (measured, 0.171.0): its parents never lead to the TUI, and
// $CODEX_THREAD_ID names the thread.
func TestWhoamiCodexThreadVariable(t *testing.T) {
	id := "01a234d3-852a-7530-a429-495bba85092c"
	cx := domain.Entry{Verdict: domain.VerdictLive, Addressable: true,
		Record: domain.Record{Harness: codex.Kind, PID: 500, SessionID: id, SocketPath: "/h/s.sock"}}
	cc := liveEntry(100, id, "/s/100.sock") // a Claude Code record with the same id is not the one
	l := Listing{Entries: []domain.Entry{cc, cx}}
	envs := []sessionEnv{{of: codex.Kind, env: (&codex.Harness{}).SessionEnv(), value: id}}
	got, err := whoami(l, parents{2: 1, 1: 0}, 2, envs)
	require.NoError(t, err)
	assert.Equal(t, 500, got.Entry.Record.PID)
	assert.Equal(t, ViaEnv, got.Via)
	assert.Equal(t, "env", ViaEnv.String())

	envs[0].value = "01a234d3-0000-7530-a429-495bba85092c"
	_, err = whoami(l, parents{2: 1, 1: 0}, 2, envs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CODEX_THREAD_ID=01a234d3-0000-7530-a429-495bba85092c matches no live record")

	// Codex's sandbox hides the daemon's socket folder from its shells.
	l.Unread = []ports.Unread{{Harness: codex.Kind, Err: errors.New("permission denied")}}
	_, err = whoami(l, parents{2: 1, 1: 0}, 2, envs)
	assert.Contains(t, err.Error(), "the codex registry could not be read from here: permission denied")
}

func TestHealthWords(t *testing.T) {
	for h, w := range map[Health]string{HealthOK: "ok", HealthWarn: "warn", HealthFail: "fail", HealthSkip: "skip"} {
		b, err := h.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, w, string(b))
	}
	assert.Equal(t, "socket-env", ViaSocketEnv.String())
	assert.Equal(t, "ancestor", ViaAncestor.String())
	assert.Equal(t, "none", ViaNone.String())
}

// One process that holds several live sessions (an opencode server) is
// no answer: whoami names them and refuses rather than pick one.
func TestWhoamiPIDOfSeveralSessionsIsNoGuess(t *testing.T) {
	a := liveEntry(100, "a", "http://127.0.0.1:4096")
	b := liveEntry(100, "b", "http://127.0.0.1:4096")
	l := Listing{Entries: []domain.Entry{a, b}}
	got, err := whoami(l, parents{10: 100, 100: 1, 1: 0}, 10, nil)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "refusal, got %v", err)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
	assert.Contains(t, r.Detail, "pid 100")
	assert.Contains(t, r.Detail, "holds 2 live sessions (a, b)")
	assert.Equal(t, ViaNone, got.Via)
	assert.Equal(t, []int{10, 100}, got.Chain)

	// A session variable that names one of them still answers.
	envs := []sessionEnv{{of: domain.HarnessClaudeCode, env: ports.SessionEnv{Var: "X",
		Names: func(r domain.Record, v string) bool { return r.SessionID == v }}, value: "b"}}
	got, err = whoami(l, parents{10: 100, 100: 1, 1: 0}, 10, envs)
	require.NoError(t, err)
	assert.Equal(t, "b", got.Entry.Record.SessionID)
	assert.Equal(t, ViaEnv, got.Via)
}
