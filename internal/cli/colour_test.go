package cli

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// On a terminal, states and refusal words are in colour, the table still
// aligned; with $NO_COLOR set, or when the stream is not a terminal (a
// pipe, a file), never.
func TestColourOnATerminalOnly(t *testing.T) {
	cfg := evConfigDir(t, evLiveRecord(t, os.Getpid(), "33333333-3333-4333-8333-333333333333", "alpha", "/tmp", ""))
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	tty := func(c *factory) { c.io.terminal = func(any) bool { return true } }

	r := evRun(t, env, tty, "list")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	lines := strings.Split(r.stdout, "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	assert.Contains(t, lines[0], "\x1b[39mSTATUS\x1b[0m")
	at := strings.Index(lines[1], "\x1b[33midle (not addressable)\x1b[0m")
	assert.Positive(t, at, "the status in colour:\n%q", r.stdout)
	assert.Equal(t, strings.Index(lines[0], "\x1b[39mSTATUS"), at, "the column stays aligned")

	r = evRun(t, env, tty, "show", "nosuch")
	assert.Equal(t, wire.ExitNotLive, r.code)
	assert.True(t, strings.HasPrefix(r.stderr, "peerctl: \x1b[31mnot_live\x1b[0m: "), "%q", r.stderr)

	env["NO_COLOR"] = "1"
	for _, args := range [][]string{{"list"}, {"show", "nosuch"}} {
		r = evRun(t, env, tty, args...)
		assert.NotContains(t, r.stdout+r.stderr, "\x1b[", "NO_COLOR: %v", args)
	}
	delete(env, "NO_COLOR")
	for _, args := range [][]string{{"list"}, {"show", "nosuch"}} {
		r = evRun(t, env, nil, args...)
		assert.NotContains(t, r.stdout+r.stderr, "\x1b[", "not a terminal: %v", args)
	}
}

// The variables that turn colour off or on, as https://no-color.org and
// gh read them: $NO_COLOR set to a non-empty value, or $CLICOLOR=0, turns
// it off (an empty $NO_COLOR does not); $CLICOLOR_FORCE (not "0") turns
// it on where the stream is not a terminal, unless the user also said no.
func TestColourVariables(t *testing.T) {
	cfg := evConfigDir(t, evLiveRecord(t, os.Getpid(), "33333333-3333-4333-8333-333333333333", "alpha", "/tmp", ""))
	tty := func(c *factory) { c.io.terminal = func(any) bool { return true } }
	for _, c := range []struct {
		vars     map[string]string
		terminal bool
		colour   bool
	}{
		{map[string]string{"NO_COLOR": ""}, true, true},
		{map[string]string{"NO_COLOR": "0"}, true, false},
		{map[string]string{"CLICOLOR": "0"}, true, false},
		{map[string]string{"CLICOLOR": "1"}, true, true},
		{map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, false, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "CLICOLOR": "0"}, true, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "TERM": "dumb"}, true, false},
	} {
		env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
		for k, v := range c.vars {
			env[k] = v
		}
		var tweak func(*factory)
		if c.terminal {
			tweak = tty
		}
		r := evRun(t, env, tweak, "list")
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		assert.Equal(t, c.colour, strings.Contains(r.stdout, "\x1b["), "%v on a terminal %v:\n%q", c.vars, c.terminal, r.stdout)
	}
}

// show's verdict and status, outbox show's state (and its history's) and
// hosts check's health are coloured on a terminal as list, outbox and
// doctor colour the same words, with the columns still aligned.
func TestColourInDetailsAndChecks(t *testing.T) {
	cfg := evConfigDir(t, evLiveRecord(t, os.Getpid(), "33333333-3333-4333-8333-333333333333", "alpha", "/tmp", ""))
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir(),
		"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir(), "PEERCTL_SSH": "false"}
	tty := func(c *factory) { c.io.terminal = func(any) bool { return true } }

	r := evRun(t, env, tty, "show", "alpha")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "verdict:       \x1b[32mlive\x1b[0m\n")
	assert.Contains(t, r.stdout, "status:        \x1b[32midle\x1b[0m\n")

	putOutbox(t, env, time.Now(), ports.OutboxMessage{Address: "r"})
	r = evRun(t, env, tty, "outbox", "show", "1")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "state:        \x1b[36mstored\x1b[0m\n")
	assert.Contains(t, r.stdout, "Z  \x1b[36mstored\x1b[0m\n", "the history's state coloured; with no reason the row ends there, not in blanks")

	r = evRun(t, env, tty, "hosts", "check", "somehost")
	require.Equal(t, wire.ExitHostUnreachable, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 4, r.stdout)
	assert.Contains(t, lines[2], "\x1b[31mfail\x1b[0m")
	assert.Contains(t, lines[3], "\x1b[90mskipped\x1b[0m")
	col := strings.Index(lines[0], "\x1b[")
	for _, l := range lines {
		assert.Equal(t, col, strings.Index(l, "\x1b["), "aligned:\n%s", r.stdout)
	}
}
