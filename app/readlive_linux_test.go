//go:build linux

package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

// afterRead runs then once its registry's read is done.
type afterRead struct {
	ports.SelectiveRegistry
	then func()
}

func (r afterRead) ReadMatching(ctx context.Context, keep func([]string) []string) (ports.Snapshot, error) {
	defer r.then()
	return r.SelectiveRegistry.ReadMatching(ctx, keep)
}

// fakeProcRoot is a process root that lists every process of ours (self
// is this process, a proc mount) holding the given pids.
func fakeProcRoot(t *testing.T, pids ...int) string {
	t.Helper()
	root := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	require.NoError(t, os.Symlink(self, filepath.Join(root, "self")))
	require.NoError(t, os.Mkdir(filepath.Join(root, self), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, self, "mountinfo"), fmt.Appendf(nil, "22 26 0:21 / %s rw - proc proc rw\n", root), 0o644))
	for _, pid := range pids {
		require.NoError(t, os.Mkdir(filepath.Join(root, strconv.Itoa(pid)), 0o755))
	}
	return root
}

// The processes are listed once per folder, after that folder's read: a
// session that starts and writes its record into the second folder after
// the first was read is found, though its pid was in no listing then. A
// pid that no listing names is gone without a kill.
func TestReadLiveListsTheProcessesAfterEachFolder(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	n := procliveness.ListedBatch
	for i := range n {
		writeLiveOnlyRecord(t, first, fmt.Sprintf("%d.json", 1000+i), 1000+i, fmt.Sprintf("aaaaaaaa-0000-4000-8000-%012d", i), fmt.Sprintf("a%d", i))
		writeLiveOnlyRecord(t, second, fmt.Sprintf("%d.json", 2000+i), 2000+i, fmt.Sprintf("bbbbbbbb-0000-4000-8000-%012d", i), fmt.Sprintf("b%d", i))
	}
	root := fakeProcRoot(t, 1000)
	// kill finds a pid whose folder the root holds: the kernel of this
	// fake /proc.
	live := procliveness.New(procliveness.WithProcRoot(root), procliveness.WithKill(func(pid int) error {
		if _, err := os.Stat(filepath.Join(root, strconv.Itoa(pid))); err != nil {
			return unix.ESRCH
		}
		return nil
	}))
	late := afterRead{fsregistry.New(first), func() {
		require.NoError(t, os.Mkdir(filepath.Join(root, "3000"), 0o755))
		writeLiveOnlyRecord(t, second, "3000.json", 3000, "cccccccc-0000-4000-8000-000000003000", "late")
	}}
	svc := New(Registries{late, fsregistry.New(second)}, live, nil, "")

	l, partial, err := svc.readLive(context.Background())
	require.NoError(t, err)
	assert.True(t, partial)
	var files []string
	for _, e := range l.Entries {
		files = append(files, e.Record.File)
	}
	assert.Equal(t, []string{"1000.json", "3000.json"}, files)
}
