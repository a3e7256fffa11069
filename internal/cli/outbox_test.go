package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/ports/wire"
)

// An id the outbox does not hold is not_found (its own exit code), not a
// usage error: nothing was wrong with how the command was written.
func TestOutboxShowNotFound(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir()}
	r := evRun(t, env, nil, "outbox", "show", "999")
	assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
	assert.Equal(t, "peerctl: not_found: message 999: the outbox is empty (nothing was ever stored)\n", r.stderr)
	r = evRun(t, env, nil, "outbox", "show", "--json", "999")
	assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"reason": "not_found"`)
}

// list with nothing live prints no bare header: it says so on stderr and
// points at --all; --json prints [] as ever.
func TestListNothingLiveSaysSo(t *testing.T) {
	stale := evRecord{PID: 999999999, SessionID: "22222222-2222-4222-8222-222222222222", Name: "gone", Cwd: "/tmp", Kind: "interactive", Version: "2.1.328", Status: "idle"}
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, stale), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	r := evRun(t, env, nil, "list")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout, "no bare header")
	assert.Contains(t, r.stderr, "peerctl: no live session; peerctl list --all shows every record and why it is not live\n")
	r = evRun(t, env, nil, "list", "--json")
	assert.Equal(t, "[]\n", r.stdout)
	assert.NotContains(t, r.stderr, "--all")
	r = evRun(t, env, nil, "list", "--all")
	assert.Contains(t, r.stdout, "gone")
	assert.NotContains(t, r.stderr, "no live session")
}
