package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoctorWithoutClaudeCode: on a machine with neither claude nor a
// Claude Code registry folder (someone using another harness only), doctor
// skips the claude row, as it does a missing qwen or codex, and passes;
// once Claude Code's registry folder is there, a claude not found fails.
func TestDoctorWithoutClaudeCode(t *testing.T) {
	bin, home := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + bin, "HOME=" + home}
	doctor := func() (int, map[string]any) {
		r := runPeerctl(t, runOpts{Env: env}, "doctor", "--json")
		var doc map[string]any
		require.NoError(t, json.Unmarshal(r.Stdout, &doc), "stdout: %s stderr: %s", r.Stdout, r.Stderr)
		return r.Code, doc
	}

	code, doc := doctor()
	assert.Equal(t, 0, code, "%v", doc)
	assert.Equal(t, true, doc["ok"], "%v", doc["problems"])
	assert.Equal(t, "skip", doc["claude"].(map[string]any)["health"])

	// A bare config dir (another harness's tools may make one) is no use
	// of Claude Code; its registry folder is.
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude"), 0o700))
	code, doc = doctor()
	assert.Equal(t, 0, code, "%v", doc)
	assert.Equal(t, "skip", doc["claude"].(map[string]any)["health"])
	require.NoError(t, os.Mkdir(filepath.Join(home, ".claude", "sessions"), 0o700))
	code, doc = doctor()
	assert.Equal(t, 1, code)
	assert.Equal(t, false, doc["ok"])
	assert.Equal(t, "fail", doc["claude"].(map[string]any)["health"])
}
