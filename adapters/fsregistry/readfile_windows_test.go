package fsregistry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestReadRegularWindows(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "4652.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"pid":4652}`), 0o600))
	b, mod, prob := readRegular(p)
	require.Nil(t, prob)
	assert.Equal(t, `{"pid":4652}`, string(b))
	assert.False(t, mod.IsZero())

	_, _, prob = readRegular(dir)
	require.NotNil(t, prob)
	assert.Equal(t, domain.VerdictUnreadable, prob.verdict)
	assert.Contains(t, prob.text, "not a regular file")

	big := filepath.Join(dir, "5031.json")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat(" ", MaxRecordBytes+1)), 0o600))
	_, _, prob = readRegular(big)
	require.NotNil(t, prob)
	assert.Equal(t, domain.VerdictMalformed, prob.verdict)

	_, _, prob = readRegular(filepath.Join(dir, "absent.json"))
	require.NotNil(t, prob)
	assert.Equal(t, domain.VerdictUnreadable, prob.verdict)
}
