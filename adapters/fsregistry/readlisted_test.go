package fsregistry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// fakeLister is a ports.PIDLister over fixed processes.
type fakeLister struct {
	procs  int
	pids   []int
	cannot bool
	listed int
}

func (f *fakeLister) Check(domain.Record) domain.Liveness { return domain.Liveness{} }
func (f *fakeLister) Gone(pids []int) []bool              { return make([]bool, len(pids)) }
func (f *fakeLister) Processes() int                      { return f.procs }
func (f *fakeLister) Listed() ([]int, bool) {
	f.listed++
	if f.cannot {
		return nil, false
	}
	return f.pids, true
}

var _ ports.PIDLister = (*fakeLister)(nil)

// staleFolder is a registry folder of n stale records (pids 100000 and
// up), each beside its key file, as Claude Code leaves them after crashes.
func staleFolder(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		pid := 100000 + i
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", pid)), fmt.Appendf(nil, `{"pid":%d}`, pid), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte("{}"), 0o600))
	}
	return dir
}

// requireLarge skips where the file system gives a folder no size that
// grows with its names (ReadListed then always lists the folder).
func requireLarge(t *testing.T, dir string) {
	t.Helper()
	size, err := folderSize(dir)
	require.NoError(t, err)
	if size/entryBytes < listedFrom {
		t.Skipf("this file system gives a folder of 2,000 names %d bytes: ReadListed lists it", size)
	}
}

func TestReadListedReadsOnlyTheFilesOfListedProcesses(t *testing.T) {
	dir := staleFolder(t, 1000)
	requireLarge(t, dir)
	writeRecord := func(name string, pid int) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, `{"pid":%d}`, pid), 0o600))
	}
	writeRecord("7.json", 7)  // a live session's
	writeRecord("9.json", 8)  // a running pid's file holding another pid: misnamed
	writeRecord("07.json", 7) // not canonical: never live, never read
	writeRecord("7b.json", 7) // the same
	live := &fakeLister{procs: 5, pids: []int{1, 7, 9, 100500, 4000000}}
	asked := false
	snap, err := New(dir).ReadListed(context.Background(), live, func(names []string) []string {
		asked = true
		return names
	})
	require.NoError(t, err)
	assert.False(t, asked, "the folder was listed")
	assert.Equal(t, 1, live.listed)
	var files []string
	for _, r := range snap.Records {
		files = append(files, r.File)
	}
	assert.Equal(t, []string{"100500.json", "7.json", "9.json"}, files, "the files of listed pids, in name order")
	assert.Equal(t, domain.VerdictMisnamed, snap.Records[2].ProblemVerdict)
	assert.Zero(t, snap.Skipped)
	assert.Equal(t, dir, snap.Dir)
}

func TestReadListedListsTheFolderWhenThatIsCheaperOrTheProcessesCannotBe(t *testing.T) {
	big := staleFolder(t, 1000)
	requireLarge(t, big)
	tests := []struct {
		name string
		dir  string
		live *fakeLister
	}{
		{"a small folder", staleFolder(t, 10), &fakeLister{procs: 5, pids: []int{100001}}},
		{"many processes", big, &fakeLister{procs: 100000, pids: []int{100001}}},
		{"processes unknown", big, &fakeLister{procs: 0, pids: []int{100001}}},
		{"cannot list every process", big, &fakeLister{procs: 5, cannot: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var offered int
			snap, err := New(tc.dir).ReadListed(context.Background(), tc.live, func(names []string) []string {
				offered = len(names)
				return names[:1]
			})
			require.NoError(t, err)
			assert.Positive(t, offered, "keep was not asked: the folder was not listed")
			assert.Len(t, snap.Records, 1)
		})
	}
}

// A read by process that finds no file says that the folder held records
// all the same (list: "none live, see --all", not "no record at all").
func TestReadListedSaysWhenItLeftRecordsUnread(t *testing.T) {
	dir := staleFolder(t, 1000)
	requireLarge(t, dir)
	snap, err := New(dir).ReadListed(context.Background(), &fakeLister{procs: 5, pids: []int{1, 2}}, nil)
	require.NoError(t, err)
	assert.Empty(t, snap.Records)
	assert.Equal(t, 1, snap.Skipped)

	// No candidate at all among the names: nothing skipped.
	for _, e := range must(os.ReadDir(dir)) {
		if filepath.Ext(e.Name()) == ".json" {
			require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	for i := range 1000 { // keep the folder large on a file system whose folders shrink
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", 200000+i, i)), nil, 0o600))
	}
	requireLarge(t, dir)
	snap, err = New(dir).ReadListed(context.Background(), &fakeLister{procs: 5, pids: []int{1, 2}}, nil)
	require.NoError(t, err)
	assert.Empty(t, snap.Records)
	assert.Zero(t, snap.Skipped)
}

func TestReadListedOfAMissingFolder(t *testing.T) {
	snap, err := New(filepath.Join(t.TempDir(), "sessions")).ReadListed(context.Background(), &fakeLister{procs: 5}, nil)
	require.NoError(t, err)
	assert.True(t, snap.Missing)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
