package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/ports/wire"
)

// TestServeHostNeedsHTTP: serve's --host names a machine for the
// dashboard; without --http it would list nothing anywhere, so it is a
// usage error, before anything else is done.
func TestServeHostNeedsHTTP(t *testing.T) {
	r := evRun(t, nil, nil, "serve", "--host", "dev-box", "--print-unit=systemd")
	assert.Equal(t, wire.ExitUsage, r.code, "stderr: %s", r.stderr)
	assert.Contains(t, r.stderr, "--host dev-box: the machines of the dashboard; give --http too")
	assert.Empty(t, r.stdout)
}
