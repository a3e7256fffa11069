package procliveness

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSmall(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 10000)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "long"), []byte(long), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600))

	got, err := readSmall(filepath.Join(dir, "long"), 1<<20)
	require.NoError(t, err)
	assert.Equal(t, long, string(got), "read whole, past one buffer")
	got, err = readSmall(filepath.Join(dir, "long"), 5000)
	require.NoError(t, err)
	assert.Len(t, got, 5000, "cut at max")
	got, err = readSmall(filepath.Join(dir, "empty"), 10)
	require.NoError(t, err)
	assert.Empty(t, got)

	_, err = readSmall(filepath.Join(dir, "none"), 10)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "open", pe.Op)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	_, err = os.ReadFile(filepath.Join(dir, "none"))
	assert.EqualError(t, err, pe.Error(), "os.ReadFile's words")

	// A file of /proc, whose size says 0.
	stat, err := readSmall("/proc/self/stat", 64<<10)
	require.NoError(t, err)
	assert.Contains(t, string(stat), ") ")
}

func TestListPIDs(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"1", "42", "4194303", "self", "net", "x1", "1x", "0"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, n), 0o755))
	}
	pids, whole, err := listPIDs(root)
	require.NoError(t, err)
	assert.True(t, whole)
	assert.ElementsMatch(t, []int{1, 42, 4194303}, pids)
	assert.ElementsMatch(t, NewTable(root).PIDs(), pids, "what a Table lists")

	_, _, err = listPIDs(filepath.Join(root, "none"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))

	// This machine's /proc holds this process.
	pids, whole, err = listPIDs("/proc")
	require.NoError(t, err)
	assert.True(t, whole)
	assert.Contains(t, pids, os.Getpid())
}

func TestPIDName(t *testing.T) {
	for name, want := range map[string]int{"1": 1, "4194303": 4194303, "42": 42} {
		got, ok := pidName([]byte(name))
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "0", "00", "self", "1x", ".", "99999999999"} {
		_, ok := pidName([]byte(name))
		assert.False(t, ok, "%q", name)
	}
}
