package procliveness_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

func fakeProcess(t *testing.T, root, pid, comm string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, pid), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, pid, "comm"), []byte(comm+"\n"), 0o644))
}

// A Table is one pass: the processes are listed once and each file read
// once, so every harness reading it sees the same snapshot.
func TestTableIsOneSnapshot(t *testing.T) {
	root := t.TempDir()
	fakeProcess(t, root, "20", "codex")
	fakeProcess(t, root, "100", "opencode")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "net"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "0"), 0o755))

	tab := procliveness.NewTable(root)
	assert.Equal(t, []int{100, 20}, tab.PIDs(), "numbered folders only, in folder-name order")
	b, err := tab.File(20, "comm", 64)
	require.NoError(t, err)
	assert.Equal(t, "codex\n", string(b))

	fakeProcess(t, root, "30", "late")
	fakeProcess(t, root, "20", "renamed")
	assert.Equal(t, []int{100, 20}, tab.PIDs(), "listed once")
	b, _ = tab.File(20, "comm", 64)
	assert.Equal(t, "codex\n", string(b), "read once")
	_, err = tab.File(40, "comm", 64)
	assert.ErrorIs(t, err, os.ErrNotExist)

	fresh := procliveness.NewTable(root)
	assert.Equal(t, []int{100, 20, 30}, fresh.PIDs())
	b, _ = fresh.File(20, "comm", 3)
	assert.Equal(t, "ren", string(b), "at most the limit")

	require.NoError(t, os.Symlink("/w/a", filepath.Join(root, "20", "cwd")))
	cwd, err := fresh.Link(20, "cwd")
	require.NoError(t, err)
	assert.Equal(t, "/w/a", cwd)
}

// TableOf shares one Table per read scope and root; without a scope every
// ask is a fresh pass.
func TestTableOfSharesPerScope(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ctx := ports.WithReadScope(context.Background())
	assert.Same(t, procliveness.TableOf(ctx, a), procliveness.TableOf(ctx, a))
	assert.NotSame(t, procliveness.TableOf(ctx, a), procliveness.TableOf(ctx, b), "one per root")
	assert.NotSame(t, procliveness.TableOf(ctx, a), procliveness.TableOf(ports.WithReadScope(ctx), a), "one per scope")
	bare := context.Background()
	assert.NotSame(t, procliveness.TableOf(bare, a), procliveness.TableOf(bare, a), "no scope: no sharing")
	assert.Equal(t, "/proc", procliveness.TableOf(bare, "").Root())
}

// Has answers from the one listing; it cannot tell when the root could not
// be listed.
func TestTableHas(t *testing.T) {
	root := t.TempDir()
	fakeProcess(t, root, "20", "codex")
	fakeProcess(t, root, "100", "opencode")
	tab := procliveness.NewTable(root)
	for pid, want := range map[int]bool{20: true, 100: true, 30: false, 0: false} {
		listed, known := tab.Has(pid)
		assert.Equal(t, want, listed, "pid %d", pid)
		assert.True(t, known)
	}
	fakeProcess(t, root, "30", "late")
	listed, _ := tab.Has(30)
	assert.False(t, listed, "listed once")

	_, known := procliveness.NewTable(filepath.Join(root, "absent")).Has(20)
	assert.False(t, known)
}
