package domain_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestOutboxStateWordsRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range domain.OutboxStates() {
		w := s.String()
		require.False(t, seen[w], "duplicate word %s", w)
		seen[w] = true
		back, err := domain.ParseOutboxState(w)
		require.NoError(t, err)
		assert.Equal(t, s, back)
	}
	_, err := domain.ParseOutboxState("sent")
	assert.ErrorContains(t, err, `"sent"`)
}

func TestOutboxStatePendingAndHanded(t *testing.T) {
	assert.True(t, domain.OutboxStored.Pending())
	assert.True(t, domain.OutboxDelivering.Pending())
	assert.False(t, domain.OutboxOutcomeUnknown.Pending())
	assert.True(t, domain.OutboxDelivered.Handed())
	assert.True(t, domain.OutboxHeld.Handed())
	assert.False(t, domain.OutboxExpired.Handed())
}

// Finished: everything but what still waits (pending) and outcome_unknown
// (it waits for a person).
func TestOutboxStateFinished(t *testing.T) {
	var finished []string
	for _, s := range domain.OutboxStates() {
		if s.Finished() {
			finished = append(finished, s.String())
		}
	}
	assert.Equal(t, []string{"delivered", "taken_up", "replied", "held", "refused", "expired", "cancelled", "denied"}, finished)
	assert.False(t, domain.OutboxAwaitingApproval.Finished(), "a held message waits for a person: never pruned")
	assert.False(t, domain.OutboxAwaitingApproval.Pending(), "a held message is not attempted")
}

func TestRetryable(t *testing.T) {
	for _, r := range domain.Reasons() {
		want := r == domain.ReasonNotLive || r == domain.ReasonNotAddressable || r == domain.ReasonIdentityMismatch ||
			r == domain.ReasonDeliveryFailed || r == domain.ReasonHostUnreachable
		assert.Equal(t, want, domain.Retryable(r), r.String())
	}
}

func TestBackoff(t *testing.T) {
	max := time.Minute
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, 2 * time.Second}, {1, 2 * time.Second}, {2, 4 * time.Second}, {4, 16 * time.Second}, {6, time.Minute}, {60, time.Minute}} {
		assert.Equal(t, tc.want, domain.Backoff(tc.n, max), "n=%d", tc.n)
	}
}
