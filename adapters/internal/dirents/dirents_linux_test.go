package dirents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWalk(t *testing.T) {
	dir := t.TempDir()
	want := []string{".", ".."}
	for i := range 1000 { // several buffers
		name := fmt.Sprintf("%d.%064x.key", i, i)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
		want = append(want, name)
	}
	var got []string
	require.NoError(t, Walk(dir, func(name []byte) bool {
		got = append(got, string(name))
		return true
	}))
	assert.ElementsMatch(t, want, got)

	calls := 0
	require.NoError(t, Walk(dir, func([]byte) bool { calls++; return calls < 3 }))
	assert.Equal(t, 3, calls, "stops when told")

	err := Walk(filepath.Join(dir, "none"), func([]byte) bool { return true })
	_, osErr := os.ReadDir(filepath.Join(dir, "none"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.EqualError(t, err, osErr.Error(), "os.ReadDir's words")
	err = Walk(filepath.Join(dir, want[2]), func([]byte) bool { return true })
	_, osErr = os.ReadDir(filepath.Join(dir, want[2]))
	assert.EqualError(t, err, osErr.Error(), "a file in the folder's place")
}
