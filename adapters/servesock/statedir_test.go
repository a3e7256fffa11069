package servesock_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/servesock"
)

func TestStateDir(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}
	d, err := servesock.StateDir(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/x/state", "peerctl"), d)
	env["XDG_STATE_HOME"] = "relative"
	d, err = servesock.StateDir(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.NotEqual(t, filepath.Join("relative", "peerctl"), d)
}
