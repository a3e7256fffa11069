package outbox

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The migrations run as one transaction: a step that fails leaves the
// file at the version it had, with none of the earlier steps' tables, so
// a reader never meets a schema between two versions (a fresh file read
// at version 1 had no host column, and `outbox list` failed with "no such
// column: host" while the service was making it).
func TestMigrationsAreAllOrNothing(t *testing.T) {
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	boom := errors.New("the last step fails")
	migrations = append(append([]step{}, saved...), func(context.Context, *sql.Tx, options) error { return boom })

	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "peerctl", FileName)
	_, err := Open(ctx, path)
	require.ErrorIs(t, err, boom)

	migrations = saved
	r, err := OpenReadOnly(ctx, path)
	require.NoError(t, err)
	defer r.Close()
	v, err := r.Version(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, v, "no step of a failed migration is kept")
	var tables int
	require.NoError(t, r.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'messages'`).Scan(&tables))
	assert.Zero(t, tables, "the first step's table was rolled back with the rest")
}
