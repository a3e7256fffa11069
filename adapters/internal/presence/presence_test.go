package presence_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/internal/presence"
)

func TestOf(t *testing.T) {
	bin, state := t.TempDir(), t.TempDir()
	prog := filepath.Join(bin, "harness")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", bin)
	gone := filepath.Join(state, "nowhere")

	assert.False(t, presence.Of(false, "", gone), "nothing there")
	assert.False(t, presence.Of(false, "no-such-harness", gone, ""), "not installed, no state")
	assert.True(t, presence.Of(true, "", gone), "its home named")
	assert.True(t, presence.Of(false, "", gone, state), "its state there")
	assert.True(t, presence.Of(false, "harness", gone), "installed, on PATH")
	assert.True(t, presence.Of(false, prog, gone), "installed, by path")
}
