package fsregistry

import (
	"context"
	"os"
	"path/filepath"
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
	var offered []string
	snap, err := New(dir).ReadMatching(context.Background(), func(name string) bool {
		offered = append(offered, name)
		return name != "200.json"
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"100.json", "200.json"}, offered, "keep sees candidates only")
	require.Len(t, snap.Records, 1)
	assert.Equal(t, 100, snap.Records[0].PID)

	all, err := New(dir).ReadMatching(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, all.Records, 2)
}
