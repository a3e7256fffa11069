package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/ports/wire"
)

// An id the outbox does not hold is not_found (its own exit code), not a
// usage error: nothing was wrong with how the command was written.
func TestOutboxShowNotFound(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir()}
	r := evRun(t, env, nil, "outbox", "show", "999")
	assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
	assert.Equal(t, "peerctl: not_found: message 999: the outbox is empty (nothing was ever stored)\n", r.stderr)
	r = evRun(t, env, nil, "outbox", "show", "--json", "999")
	assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"reason": "not_found"`)
}
