package fsregistry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadMatchingSkipsRejectedFilesUnread(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"100.json":  `{"pid":100}`,
		"200.json":  `{"pid":200}`,
		"notes.txt": "x",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	var offered [][]string
	snap, err := New(dir).ReadMatching(context.Background(), func(names []string) []string {
		offered = append(offered, slices.Clone(names))
		return slices.DeleteFunc(names, func(n string) bool { return n == "200.json" })
	})
	require.NoError(t, err)
	require.Len(t, offered, 1, "keep is asked once")
	assert.ElementsMatch(t, []string{"100.json", "200.json"}, offered[0], "keep sees candidates only")
	require.Len(t, snap.Records, 1)
	assert.Equal(t, 100, snap.Records[0].PID)

	all, err := New(dir).ReadMatching(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, all.Records, 2)
}

// keep is asked once, after the folder has been listed whole: with every
// candidate of a folder larger than one getdents buffer, and before any
// record is opened (a caller may list the processes then: every process
// that wrote a record listed is older than that listing).
func TestReadMatchingAsksKeepOnceAfterTheWholeFolder(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	for i := range n {
		pid := 100000 + i
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", pid)), fmt.Appendf(nil, `{"pid":%d}`, pid), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte("{}"), 0o600))
	}
	calls := 0
	snap, err := New(dir).ReadMatching(context.Background(), func(names []string) []string {
		calls++
		assert.Len(t, names, n, "every candidate at once")
		return names[:1]
	})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Len(t, snap.Records, 1)

	calls = 0
	empty := t.TempDir()
	_, err = New(empty).ReadMatching(context.Background(), func(names []string) []string { calls++; return names })
	require.NoError(t, err)
	assert.Zero(t, calls, "an empty folder asks nothing")
}
