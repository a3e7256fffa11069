//go:build unix

package acceptance

// One harness's trouble is not another's: a Qwen Code home that cannot be
// read (its sessions folder is a file, or there is no $HOME to find it)
// is a warning and a row, and Claude Code sessions are still listed,
// shown and sent to.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBrokenQwenHomeLeavesClaudeCodeWorking(t *testing.T) {
	w := newSendWorld(t, false)
	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "sessions"), []byte("not a folder"), 0o600))
	envs := map[string][]string{
		"sessions is a file": {"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "QWEN_HOME=" + broken},
		"no HOME":            {"PATH=" + os.Getenv("PATH")},
	}
	for label, env := range envs {
		t.Run(label, func(t *testing.T) {
			r := runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "list", "--harness", "claude-code", "--json")
			assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			var rows []map[string]any
			require.NoError(t, json.Unmarshal(r.Stdout, &rows), "stdout: %s", r.Stdout)
			require.Len(t, rows, 1)
			assert.Equal(t, w.id, rows[0]["sessionId"])
			assert.NotContains(t, string(r.Stderr), "qwen-code", "--harness claude-code reads Claude Code's registry alone")

			// Every harness asked for: what could be read, a warning, exit 1.
			r = runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "list", "--json")
			assert.Contains(t, string(r.Stderr), "warning: qwen-code")
			assert.Equal(t, 1, r.Code, "stderr: %s", r.Stderr)
			require.NoError(t, json.Unmarshal(r.Stdout, &rows), "stdout: %s", r.Stdout)
			assert.Len(t, rows, 1)

			r = runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "show", w.id)
			assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)

			r = runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "send", "--transport", "socket", "--json", w.id, "hello")
			assert.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)

			// A name could also be a Qwen Code session's, unseen: refused.
			r = runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "send", "--transport", "socket", "inbox", "hello")
			assert.Equal(t, 4, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			assert.Contains(t, string(r.Stderr), "qwen-code")

			r = runPeerctl(t, runOpts{Env: env}, "--config-dir", w.config, "doctor", "--json")
			var doc map[string]any
			require.NoError(t, json.Unmarshal(r.Stdout, &doc), "doctor --json printed no JSON: %s\nstderr: %s", r.Stdout, r.Stderr)
			assert.Equal(t, "warn", doc["qwen"].(map[string]any)["health"], "%s", r.Stdout)
			assert.NotEqual(t, "fail", doc["registry"].(map[string]any)["health"], "%s", r.Stdout)
		})
	}
}

// The mirror case: with no $HOME and no Claude Code config dir given, Claude
// Code's registry cannot be located; a Qwen Code home given by
// $QWEN_HOME is listed all the same, and doctor --json still prints JSON.
// (Before, the unlocated config dir ended every command with exit 1.)
func TestUnlocatedClaudeCodeLeavesQwenCodeWorking(t *testing.T) {
	qwen := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(qwen, "sessions"), 0o700))
	env := []string{"PATH=" + os.Getenv("PATH"), "QWEN_HOME=" + qwen}

	r := runPeerctl(t, runOpts{Env: env}, "list", "--harness", "qwen-code", "--json")
	assert.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.JSONEq(t, "[]", string(r.Stdout))
	assert.NotContains(t, string(r.Stderr), "claude-code", "--harness qwen-code reads Qwen Code's registry alone")

	r = runPeerctl(t, runOpts{Env: env}, "list", "--json")
	assert.Equal(t, 1, r.Code, "a harness in scope was not read: stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "warning: claude-code: registry not read")
	assert.JSONEq(t, "[]", string(r.Stdout))

	r = runPeerctl(t, runOpts{Env: env}, "doctor", "--json")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(r.Stdout, &doc), "doctor --json printed no JSON: %s\nstderr: %s", r.Stdout, r.Stderr)
	assert.Equal(t, false, doc["ok"])
}
