package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// Flags' words say what the flag does in the command they are on: send's
// --codex names no doctor, --from says which transport cannot carry it.
func TestFlagWordsFitTheirCommand(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t)}
	r := evRun(t, env, nil, "send", "--help")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	codex := regexp.MustCompile(`--codex string +(.*)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, codex, r.stdout)
	assert.NotContains(t, codex[1], "doctor")
	assert.NotContains(t, r.stdout, "not socket")
	assert.Contains(t, r.stdout, "not with --transport socket")
}

// policy list numbers the defaults as policy check and docs/POLICY.md
// name them: "default 1", "default 2".
func TestPolicyListNumbersTheDefaults(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "CLAUDE_CONFIG_DIR": evConfigDir(t)}
	r := evRun(t, env, nil, "policy", "list")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 3, r.stdout)
	assert.True(t, strings.HasPrefix(lines[1], "default 1  hold"), r.stdout)
	assert.True(t, strings.HasPrefix(lines[2], "default 2  allow"), r.stdout)
	r = evRun(t, env, nil, "policy", "check", "--from", "mcp", "--to", "frontend")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "by default rule 2 (allow from=* to=*)")
}

// relay --help's example that filters the inbound messages keeps stdin
// open: the relay ends at the end of stdin, so a file alone would end it
// before any reply came.
func TestRelayExampleHearsReplies(t *testing.T) {
	r := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t)}, nil, "relay", "--help")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	found := false
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, `"inbound"`) {
			found = true
			assert.Contains(t, l, "sleep", "stdin kept open: %s", l)
		}
	}
	assert.True(t, found, r.stdout)
}
