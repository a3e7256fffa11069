//go:build linux

package procliveness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePPID(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    int
		wantErr bool
	}{
		{"plain", "4652 (claude) S 4600 4652 4652 0 -1 4194560", 4600, false},
		{"name with ') ' inside", "77 (evil) S 1 (x) S 99 77 77", 99, false},
		{"init", "1 (init) S 0 1 1 0", 0, false},
		{"no paren", "77 evil S 1", 0, true},
		{"truncated", "77 (x) S", 0, true},
		{"not a number", "77 (x) S abc 1", 0, true},
		{"negative", "77 (x) S -4 1", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePPID([]byte(tt.stat))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestTreeParentOfThisProcess(t *testing.T) {
	got, err := NewTree("").Parent(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), got)
}

func TestTreeParentFromProcRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "42"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "42", "stat"), []byte("42 (a b) c) R 7 42 42"), 0o644))
	got, err := NewTree(root).Parent(42)
	require.NoError(t, err)
	assert.Equal(t, 7, got)

	_, err = NewTree(root).Parent(43)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
