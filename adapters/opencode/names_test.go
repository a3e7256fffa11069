package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session-less process's derived name is spelt one way whatever flags
// its TUI started with (a user types it: peerctl show "opencode TUI in
// w"): a plain TUI's and a TUI's with --port are both "opencode TUI in
// FOLDER"; a headless server's "opencode serve in FOLDER".
func TestDerivedNamesSpeltOneWay(t *testing.T) {
	work := t.TempDir()
	locked := newFake(t)
	locked.password = "s3cret"
	p := newFakeProc(t)
	p.add(t, 102, work, []string{"opencode"})
	p.add(t, 103, work, []string{"opencode", "--port", "0"}, portOf(t, locked.addr()))
	p.add(t, 107, work, []string{"opencode", "serve"})       // starting: no port yet
	p.add(t, 108, work, []string{"opencode", "--port", "0"}) // the same, a TUI
	r := NewRegistry(p.db(), Auth{}, "")
	r.procRoot, r.uid, r.serverPIDOf = p.root, os.Getuid(), self
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	names := map[int]string{}
	for _, rec := range snap.Records {
		names[rec.PID] = rec.Name
	}
	base := filepath.Base(work)
	assert.Equal(t, map[int]string{
		102: "opencode TUI in " + base,
		103: "opencode TUI in " + base + " (password-protected)",
		107: "opencode serve in " + base,
		108: "opencode TUI in " + base,
	}, names)
}
