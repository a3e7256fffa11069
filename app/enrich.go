package app

import (
	"context"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Enrich reads the registry once and returns, for every id in ids (full
// session ids, as in a transcript's file name <sessionId>.jsonl) whose
// session is live, its wire.LiveInfo. Ids that are unknown, or whose record is
// stale, reused, foreign or malformed, are absent from the map. When two
// live records carry the same id (a resumed session running twice), the
// addressable one wins, then the most recently started. The only error is
// the registry read's.
func (s *Service) Enrich(ctx context.Context, ids []string) (map[string]wire.LiveInfo, error) {
	out := make(map[string]wire.LiveInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	l, _, err := s.readLive(ctx) // only live entries count: gone pids' files stay unread
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	best := map[string]domain.Entry{}
	for _, e := range l.Entries {
		id := e.Record.SessionID
		if !e.Live() || id == "" || !want[id] {
			continue
		}
		if prev, ok := best[id]; ok && !better(e, prev) {
			continue
		}
		best[id] = e
	}
	for id, e := range best {
		out[id] = wire.LiveInfo{Endpoint: e.Endpoint().String(), Status: e.Record.Status.String()}
	}
	return out, nil
}

func better(a, b domain.Entry) bool {
	if a.Addressable != b.Addressable {
		return a.Addressable
	}
	return a.Record.StartedAt.After(b.Record.StartedAt)
}
