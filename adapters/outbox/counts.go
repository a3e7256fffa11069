package outbox

import (
	"context"

	"github.com/peerctl/peerctl/domain"
)

// Counts returns how many messages the outbox holds in each state
// (peerctl serve status); a state with none is absent. A state word this
// build does not know is an *Error, as every failure to read the file.
func (s *Store) Counts(ctx context.Context) (map[domain.OutboxState]int, error) {
	if s.blank {
		return map[domain.OutboxState]int{}, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM messages GROUP BY state`)
	if err != nil {
		return nil, s.fail("count messages", err)
	}
	defer func() { _ = rows.Close() }()
	out := map[domain.OutboxState]int{}
	for rows.Next() {
		var word string
		var n int
		if err := rows.Scan(&word, &n); err != nil {
			return nil, s.fail("count messages", err)
		}
		st, err := domain.ParseOutboxState(word)
		if err != nil {
			return nil, s.fail("count messages", err)
		}
		out[st] = n
	}
	return out, s.fail("count messages", rows.Err())
}
