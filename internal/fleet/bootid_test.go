//go:build linux || darwin

package fleet

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// On Linux and macOS a service's place holds this boot's id (a UUID), so
// two clones of one machine are two owners.
func TestBootIDIsThisBootsUUID(t *testing.T) {
	id := bootID()
	assert.Regexp(t, regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), id)
	assert.Equal(t, id, bootID(), "one boot, one id")
}
