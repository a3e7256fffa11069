package outbox

import (
	"context"
	"database/sql"
	"fmt"
)

// FillDisk caps the file at the pages it has now, as a full disk does: a
// change that needs one more page fails with SQLite's SQLITE_FULL
// ("database or disk is full"), the error a write that gets ENOSPC gives.
// It works for root too (chmod does not stop root; no mount is needed).
func (s *Store) FillDisk(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&n); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, n))
	return err
}

// MigrateTo takes the database at path, made by sql.Open("sqlite", path),
// to schema version v with this build's steps: a file as an older peerctl
// left it, for tests of the steps after v.
func MigrateTo(ctx context.Context, db *sql.DB, v int) error {
	saved := migrations
	defer func() { migrations = saved }()
	migrations = saved[:v]
	return runSteps(ctx, db, 0, options{})
}
