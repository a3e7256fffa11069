package outbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

func TestCountsByState(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	got, err := s.Counts(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
	var ids []int64
	for _, k := range []string{"a", "b", "c"} {
		m, _, err := s.Put(ctx, msg(k))
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	_, err = s.Move(ctx, ids[0], []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: t0, Reason: "cancelled"})
	require.NoError(t, err)
	got, err = s.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[domain.OutboxState]int{domain.OutboxStored: 2, domain.OutboxCancelled: 1}, got)
}
