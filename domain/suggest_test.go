package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// A mistyped name is refused (never auto-picked) with the close live names
// suggested, closest first; a stale record's name is never suggested.
func TestResolveNotLiveSuggestsCloseNames(t *testing.T) {
	live := []domain.Entry{
		liveEntry(4652, idA, "delta"),
		liveEntry(4653, idB, "deltas"),
		liveEntry(4654, idC, "proj-89"),
		liveEntry(4655, idD, "Build-3F"),
		staleEntry(4656, idE, "delat2"),
	}
	tests := []struct {
		address string
		want    []string
	}{
		{"delat", []string{"delta", "deltas"}},
		{"delt", []string{"delta", "deltas"}},
		{"proj89", []string{"proj-89"}},
		{"build-3f", []string{"Build-3F"}},
		{"pro", []string{"proj-89"}},
		{"nobody", nil},
		{"zzzzzzzz", nil},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			_, err := domain.Resolve(live, tt.address)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonNotLive, r.Reason)
			assert.Equal(t, tt.want, r.Suggestions)
			if tt.want == nil {
				assert.NotContains(t, r.Detail, "did you mean")
				return
			}
			assert.Contains(t, r.Detail, `; did you mean "`+tt.want[0]+`"`)
		})
	}
}

// ShortIDs: the shortest prefix of 8+ characters that names the entry
// alone, and Resolve takes it.
func TestShortIDsResolve(t *testing.T) {
	twinA := "26df9a5b-aaaa-4000-8000-000000000001"
	twinB := "26df9a5b-abbb-4000-8000-000000000002"
	es := []domain.Entry{
		liveEntry(1, idA, "one"),
		liveEntry(2, twinA, "two"),
		liveEntry(3, twinB, "three"),
		liveEntry(4, idB, "a8f89b60"), // a name equal to another id's 8-character prefix
		liveEntry(5, idD, "five"),
	}
	got := domain.ShortIDs(es)
	assert.Equal(t, []string{"26df9a5b-d", "26df9a5b-aa", "26df9a5b-ab", "a8f89b60-", "d00d0000"}, got)
	for i, short := range got {
		s, err := domain.Resolve(es, short)
		require.NoError(t, err, short)
		assert.Equal(t, es[i].Record.SessionID, s.ID(), short)
	}
}

// A suggestion that differs from the address in Unicode normalisation
// alone (macOS input gives "u" + U+0308 where the name has "ü") would read
// the same on screen: both are shown with their combining marks escaped
// and the refusal says why they differ. A name with marks that is simply
// mistyped keeps its marks as they are.
func TestResolveNotLiveShowsANormalisationDifference(t *testing.T) {
	live := []domain.Entry{liveEntry(4652, idA, "build-ü日本"), liveEntry(4653, idB, "हिन्दी")}
	_, err := domain.Resolve(live, "build-u\u0308日本")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, []string{"build-ü日本"}, r.Suggestions)
	assert.Equal(t, `no live session matches "build-u\u0308日本"; did you mean "build-ü日本"? (they differ in Unicode normalisation: one writes a letter and a combining mark, shown as \u0308, where the other has one precomposed letter; names are matched byte for byte)`, r.Detail)

	_, err = domain.Resolve(live, "हिन्दि")
	r, ok = domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	assert.Equal(t, `no live session matches "हिन्दि"; did you mean "हिन्दी"?`, r.Detail)
}
