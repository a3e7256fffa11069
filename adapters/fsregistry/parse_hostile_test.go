package fsregistry_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
)

// Timestamps in a unit other than milliseconds are flagged and left unset,
// never turned into a date in 1970 or in year 58000 (found by FuzzParse).
func TestParseTimestampUnits(t *testing.T) {
	tests := []struct {
		desc, field, value string
		wantYear           int // 0: unset with a warning
	}{
		{"milliseconds", "startedAt", "1796027521308", 2026},
		{"seconds", "startedAt", "1796027521", 0},
		{"microseconds", "startedAt", "1796027521308000", 0},
		{"nanoseconds", "updatedAt", "1796027521308000000", 0},
		{"last ms of year 9999", "nameSince", "253402300799999", 9999},
		{"first ms of year 10000", "nameSince", "253402300800000", 0},
		{"statusUpdatedAt in milliseconds", "statusUpdatedAt", "1796027521308", 2026},
		{"statusUpdatedAt in seconds", "statusUpdatedAt", "1796027521", 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rec, err := fsregistry.Parse([]byte(`{"pid":7,"` + tc.field + `":` + tc.value + `}`))
			require.NoError(t, err)
			got := map[string]int{"startedAt": rec.StartedAt.Year(), "nameSince": rec.NameSince.Year(), "updatedAt": rec.UpdatedAt.Year(), "statusUpdatedAt": rec.StatusUpdatedAt.Year()}
			zero := map[string]bool{"startedAt": rec.StartedAt.IsZero(), "nameSince": rec.NameSince.IsZero(), "updatedAt": rec.UpdatedAt.IsZero(), "statusUpdatedAt": rec.StatusUpdatedAt.IsZero()}
			if tc.wantYear == 0 {
				assert.True(t, zero[tc.field], "%s set to year %d", tc.field, got[tc.field])
				require.Len(t, rec.Warnings, 1)
				assert.Contains(t, rec.Warnings[0], tc.field+" "+tc.value)
				return
			}
			assert.Equal(t, tc.wantYear, got[tc.field])
			assert.Empty(t, rec.Warnings)
		})
	}
}
