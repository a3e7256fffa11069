package outbox

import (
	"context"
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

// Migrations are the schema's steps, for tests that build an older file.
var Migrations = migrations
