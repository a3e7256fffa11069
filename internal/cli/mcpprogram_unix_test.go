//go:build unix

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doctor's peerctl-mcp version check is bounded: a peerctl-mcp that never
// answers is a warning, and nothing it started is left running.
func TestDoctorMCPVersionCheckIsBounded(t *testing.T) {
	old := mcpVersionTimeout
	mcpVersionTimeout = 300 * time.Millisecond
	t.Cleanup(func() { mcpVersionTimeout = old })
	t.Setenv("PATH", t.TempDir()+":"+os.Getenv("PATH"))
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "peerctl"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "peerctl-mcp"),
		[]byte("#!/bin/sh\nsleep 60 >/dev/null 2>&1 &\necho $! > "+pidFile+"\nwait\n"), 0o755))
	c := newFactory(nil, nil, nil, func(string) string { return "" })
	c.executable = func() (string, error) { return filepath.Join(dir, "peerctl"), nil }
	r := newMCPDoctor(c).check(context.Background())
	assert.Equal(t, "warn", r.Health)
	assert.Contains(t, r.Note, "did not say its version")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 10*time.Millisecond,
		"the script's child is still running")
}
