package claudecode_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// TestDoctorMissingClaude: no claude on PATH is a skip on a machine with
// no Claude Code state (someone using only another harness), and a
// problem when Claude Code's registry folder is there, its config dir was named, or the
// program was named.
func TestDoctorMissingClaude(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	home := t.TempDir()
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	row := func(t *testing.T, s ports.HarnessSettings) ports.DoctorRow {
		t.Helper()
		h, err := claudecode.New(s)
		require.NoError(t, err)
		rows := h.Doctor(context.Background(), nil)
		require.Len(t, rows, 1)
		return rows[0]
	}

	t.Run("no state: skip", func(t *testing.T) {
		r := row(t, ports.HarnessSettings{Getenv: env(map[string]string{"HOME": home})})
		assert.Equal(t, domain.HealthSkip, r.Health)
		assert.Empty(t, r.Problems)
		assert.Equal(t, "skip", r.Lines[0].Health)
		assert.Contains(t, r.Lines[0].Text, `claude not found (find "claude"`)
	})
	t.Run("a bare config dir: skip", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(home, ".claude"), 0o700))
		t.Cleanup(func() { _ = os.Remove(filepath.Join(home, ".claude")) })
		r := row(t, ports.HarnessSettings{Getenv: env(map[string]string{"HOME": home})})
		assert.Equal(t, domain.HealthSkip, r.Health)
	})
	t.Run("its registry folder there: fail", func(t *testing.T) {
		require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude", "sessions"), 0o700))
		t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(home, ".claude")) })
		r := row(t, ports.HarnessSettings{Getenv: env(map[string]string{"HOME": home})})
		assert.Equal(t, domain.HealthFail, r.Health)
		assert.NotEmpty(t, r.Problems)
	})
	t.Run("config dir named: fail", func(t *testing.T) {
		r := row(t, ports.HarnessSettings{Flags: map[string]string{claudecode.FlagConfigDir: filepath.Join(home, "nowhere")}, Getenv: env(nil)})
		assert.Equal(t, domain.HealthFail, r.Health)
	})
	t.Run("program named: fail", func(t *testing.T) {
		r := row(t, ports.HarnessSettings{Getenv: env(map[string]string{"HOME": home, "PEERCTL_CLAUDE": "claude-pinned"})})
		assert.Equal(t, domain.HealthFail, r.Health)
	})
}
