package acceptance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShowAddressableAgreesWithList: a live session whose socket file does
// not exist is not addressable in show, as list says, with list's reason.
func TestShowAddressableAgreesWithList(t *testing.T) {
	config, sessions := catRegistry(t)
	self := os.Getpid()
	sock := filepath.Join(t.TempDir(), "gone.sock")
	catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "demo", sock))

	res := catRun(t, sessions, runOpts{}, "--config-dir", config, "list", "--json")
	require.Equal(t, 0, res.Code, "stderr %s", res.Stderr)
	var listed []catListEntry
	require.NoError(t, json.Unmarshal(res.Stdout, &listed))
	require.Len(t, listed, 1)
	require.False(t, listed[0].Addressable, "list: the socket is absent")

	res = catRun(t, sessions, runOpts{}, "--config-dir", config, "show", "--json", "demo")
	require.Equal(t, 0, res.Code, "stderr %s", res.Stderr)
	var shown struct {
		Addressable   bool   `json:"addressable"`
		Unaddressable string `json:"unaddressable"`
	}
	require.NoError(t, json.Unmarshal(res.Stdout, &shown))
	assert.False(t, shown.Addressable, "show must agree with list")
	assert.Equal(t, listed[0].Unaddressable, shown.Unaddressable)

	res = catRun(t, sessions, runOpts{}, "--config-dir", config, "show", "demo")
	require.Equal(t, 0, res.Code)
	assert.Regexp(t, `addressable:\s+false`, string(res.Stdout))
	assert.Contains(t, string(res.Stdout), "why not:")
}
