package fsregistry

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCandidateNames: the folder listing keeps exactly the candidates
// os.ReadDir's names give, over more entries than one getdents buffer holds
// and with names of every length.
func TestCandidateNames(t *testing.T) {
	dir := t.TempDir()
	for i := range 1500 {
		pid := 100000 + i
		long := strings.Repeat("x", i%200)
		for _, name := range []string{
			fmt.Sprintf("%d.json", pid),
			fmt.Sprintf("%d.%064d.key", pid, i),
			fmt.Sprintf(".%d.json", pid),
			fmt.Sprintf("%d.json.tmp", pid),
			fmt.Sprintf("%s%d.json", long, i),
		} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
		}
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "folder.json"), 0o700))

	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var want []string
	for _, de := range des {
		if Candidate(de.Name()) {
			want = append(want, de.Name())
		}
	}
	require.Greater(t, len(want), 1000, "more entries than one getdents buffer holds")

	got, err := candidateNames(dir)
	require.NoError(t, err)
	sort.Strings(got)
	assert.Equal(t, want, got)
}

func TestCandidateNamesErrors(t *testing.T) {
	_, err := candidateNames(filepath.Join(t.TempDir(), "absent"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	file := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = candidateNames(file)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	assert.Contains(t, err.Error(), file+": not a directory")
}
