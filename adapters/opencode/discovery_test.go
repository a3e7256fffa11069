package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

func TestUnsupportedByGOOS(t *testing.T) {
	assert.Empty(t, unsupported("linux"))
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		why := unsupported(goos)
		assert.Contains(t, why, "not supported on "+goos+" yet", goos)
		assert.Contains(t, why, "/proc", goos)
	}
}

// Off Linux the registry reads nothing and, when opencode has run for this
// user, says so once, however many opencode processes there are; doctor's
// row says the same instead of "ok".
func TestOffLinuxNothingIsFoundAndDoctorSaysWhy(t *testing.T) {
	db := filepath.Join(t.TempDir(), "opencode.db")
	p := newFakeProc(t)
	for pid := 101; pid < 104; pid++ {
		p.add(t, pid, t.TempDir(), []string{"opencode", "serve"}, 1)
	}
	for _, goos := range []string{"darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			h, err := New(ports.HarnessSettings{Getenv: func(k string) string {
				if k == DBEnv {
					return db
				}
				return ""
			}})
			require.NoError(t, err)
			h.registry.procRoot, h.registry.goos = p.root, goos

			// opencode never ran here: nothing listed, nothing said, doctor skips.
			snap, err := h.Registry().Read(context.Background())
			require.NoError(t, err)
			assert.Empty(t, snap.Records)
			assert.Empty(t, snap.Warnings)
			rows := h.Doctor(context.Background(), nil)
			require.Len(t, rows, 1)
			assert.Equal(t, domain.HealthSkip, rows[0].Health)
			assert.Empty(t, rows[0].Warnings)
			require.Len(t, rows[0].Lines, 1)
			assert.Contains(t, rows[0].Lines[0].Text, "not supported on "+goos)

			// Its database exists: the gap is a warning, once.
			require.NoError(t, os.WriteFile(db, nil, 0o600))
			t.Cleanup(func() { _ = os.Remove(db) })
			snap, err = h.Registry().Read(context.Background())
			require.NoError(t, err)
			assert.Empty(t, snap.Records)
			require.Len(t, snap.Warnings, 1)
			assert.Equal(t, "opencode: "+unsupported(goos), snap.Warnings[0])
			rows = h.Doctor(context.Background(), nil)
			require.Len(t, rows, 1)
			assert.Equal(t, domain.HealthWarn, rows[0].Health)
			assert.Equal(t, []string{"opencode: " + unsupported(goos)}, rows[0].Warnings)
			j, ok := rows[0].JSON.(DoctorJSON)
			require.True(t, ok)
			assert.Equal(t, "warn", j.Health)
			assert.Equal(t, unsupported(goos), j.Note)
			assert.NotNil(t, j.Servers)
		})
	}
}

// On Linux no opencode running is ok where the opencode program is
// found; where it is not, the row is skipped, as qwen's and codex's are,
// in the same words.
func TestOnLinuxNoServerIsOK(t *testing.T) {
	h, err := New(ports.HarnessSettings{Getenv: func(k string) string {
		if k == DBEnv {
			return filepath.Join(t.TempDir(), "opencode.db")
		}
		return ""
	}})
	require.NoError(t, err)
	h.registry.goos = "linux"
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	rows := h.Doctor(context.Background(), nil)
	require.Len(t, rows, 1)
	assert.Equal(t, domain.HealthSkip, rows[0].Health)
	assert.Equal(t, `opencode not found (find "opencode": executable file not found in $PATH); opencode servers are found all the same; 0 servers; 0 live sessions, 0 addressable`,
		rows[0].Lines[0].Text)
	assert.Equal(t, "skip", rows[0].JSON.(DoctorJSON).Health)

	require.NoError(t, os.WriteFile(filepath.Join(bin, Program), []byte("#!/bin/sh\n"), 0o755))
	rows = h.Doctor(context.Background(), nil)
	require.Len(t, rows, 1)
	assert.Equal(t, domain.HealthOK, rows[0].Health)
	assert.Equal(t, "0 servers; 0 live sessions, 0 addressable", rows[0].Lines[0].Text)
}
