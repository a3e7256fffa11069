package serve

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A request of another node (over the bus) keeps the service from idling
// out while it runs, and for the idle time after it.
func TestOtherNodesRequestsKeepTheServiceUp(t *testing.T) {
	a := &Activity{}
	s := &Server{o: Options{Activity: a}, last: time.Now().Add(-time.Hour)}
	assert.True(t, s.quiet(time.Minute), "no request for an hour: idle")
	end := a.Begin()
	assert.False(t, s.quiet(time.Nanosecond), "a bus request running")
	end()
	assert.False(t, s.quiet(time.Minute), "a bus request just ended")
}
