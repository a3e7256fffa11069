// Package outboxstore is the outbox's store (wiring.Store over
// adapters/outbox, one SQLite file). It is linked into peerctl-mcp only:
// SQLite (modernc.org/sqlite, modernc.org/libc) would cost every command
// of peerctl its package initialisation and a binary twice the size
// (docs/PERFORMANCE.md), so peerctl runs serve, watch and the outbox
// commands as peerctl-mcp when they need the store.
package outboxstore

import (
	"context"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/internal/wiring"
)

// Store opens the outbox's SQLite file (adapters/outbox).
type Store struct{}

var _ wiring.Store = Store{}

// Open opens (creating and migrating) the outbox at path, upgrade
// rewriting each stored request of an older protocol to this one's.
func (Store) Open(ctx context.Context, path string, upgrade func(request []byte) ([]byte, error)) (wiring.OutboxReader, error) {
	st, err := outbox.Open(ctx, path, outbox.WithRequestUpgrade(upgrade))
	if err != nil {
		return nil, err
	}
	return st, nil
}

// OpenReadOnly opens the outbox at path for reading: an error wrapping
// fs.ErrNotExist when there is none yet.
func (Store) OpenReadOnly(ctx context.Context, path string) (wiring.OutboxReader, error) {
	st, err := outbox.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	return st, nil
}
