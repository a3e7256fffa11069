//go:build !peerctlfault

package serve

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
)

// A release build has no fault points: $PEERCTL_FAULT, which pauses the
// tests' peerctlfault build, leaves the store as it is.
func TestNoFaultPointsOutsideTheTestBuild(t *testing.T) {
	st, err := outbox.Open(context.Background(), filepath.Join(t.TempDir(), outbox.FileName))
	require.NoError(t, err)
	defer st.Close()
	for _, p := range []string{"store", "stored", "deliver", "handed"} {
		t.Setenv("PEERCTL_FAULT", p)
		assert.Same(t, st, faulty(t.Context(), st, io.Discard))
	}
}
