package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Every JSON time has one form (docs/OUTPUT.md): RFC 3339 in UTC to the
// millisecond, always three digits, whatever the time's own precision
// (outbox times had nanoseconds, serve status whole seconds).
func TestRFC3339IsOneForm(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 12, 7, 5, 2, 9, 183929132, cet), "2026-12-07T04:02:09.183Z"},
		{time.Date(2026, 12, 7, 4, 2, 9, 0, time.UTC), "2026-12-07T04:02:09.000Z"},
		{time.UnixMilli(1796027521308), "2026-11-30T08:32:01.308Z"},
		{time.Time{}, ""},
	} {
		got := RFC3339(tc.in)
		assert.Equal(t, tc.want, got)
		if got != "" {
			back, err := time.Parse(time.RFC3339, got)
			assert.NoError(t, err)
			assert.True(t, back.Equal(tc.in.Truncate(time.Millisecond)), got)
		}
	}
}
