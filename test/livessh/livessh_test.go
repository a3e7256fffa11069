//go:build linux

package livessh_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livessh"
)

// TestLiveMachine: the second machine is what the cross-host tests take it
// for — the known alias gets in as the created user, the other two are
// refused by host-key checking, its processes live in another pid
// namespace, and a Claude Code session behind it registers with a
// pidDomain that is not ours.
func TestLiveMachine(t *testing.T) {
	livessh.Require(t)
	bin := livecc.Require(t, livecc.Version())
	m := livessh.Start(t, "far")
	ctx := context.Background()

	out, err := m.SSH(ctx, nil, "sh", "-c", `id -un; readlink /proc/self/ns/pid; echo "$1"`, "sh", "a'b $(id) `x`")
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 3, "%s", out)
	assert.Equal(t, m.User, lines[0])
	ours, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	assert.NotEqual(t, ours, lines[1], "another pid namespace")
	assert.Equal(t, "a'b $(id) `x`", lines[2], "a word arrives whole")

	for _, alias := range []string{m.UnknownKey, m.WrongKey} {
		far := *m
		far.Alias = alias
		out, err := far.SSH(ctx, nil, "true")
		assert.Error(t, err, "%s gets in: %s", alias, out)
		assert.Contains(t, string(out), "Host key verification failed", alias)
	}

	s := m.StartClaude(bin, livessh.SessionOptions{Name: "far-session"})
	assert.Equal(t, "far-session", s.Name)
	assert.FileExists(t, s.RecordPath())
	raw, err := os.ReadFile(s.RecordPath())
	require.NoError(t, err)
	assert.NotContains(t, string(raw), ours, "the record's pidDomain is the far namespace's")

	m.Stop()
	assert.Empty(t, m.Processes(), "nothing of the user runs after Stop")
}
