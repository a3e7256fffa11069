package serve

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// fullOutbox is an outbox on a full disk: every write fails with ENOSPC,
// as the SQLite file's writes would (outbox.Error wraps it).
type fullOutbox struct {
	ports.Outbox
	path string
}

func (f fullOutbox) Put(context.Context, ports.OutboxMessage) (ports.OutboxMessage, bool, error) {
	return ports.OutboxMessage{}, false, &outbox.Error{Path: f.path, Op: "store a message", Err: syscall.ENOSPC}
}

// homes are settings whose harness homes are empty folders of the test.
func homes(t *testing.T) wire.Settings {
	home := t.TempDir()
	return wire.Settings{Flags: map[string]string{"config-dir": filepath.Join(home, "claude"), "qwen-home": filepath.Join(home, "qwen"),
		"codex-home": filepath.Join(home, "codex")}}
}

// A durable send while the disk is full is refused with outbox_unavailable,
// naming the file and the cause and saying a plain send still works; it
// says nothing was stored, and nothing is.
func TestDurableSendOnAFullDiskIsRefused(t *testing.T) {
	s := newServer(t.Context(), Options{})
	s.ob = app.NewOutbox(fullOutbox{path: "state/outbox.db"}, nil)
	stored := false
	a := s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "the nightly build broke", Timeout: time.Second},
		Durable: time.Hour, Settings: homes(t)}, func(Ref) { stored = true })
	require.NotNil(t, a.Refusal, "%+v", a)
	r, ok := domain.AsRefusal(a.Refusal.Err())
	require.True(t, ok)
	assert.Equal(t, domain.ReasonOutboxUnavailable, r.Reason)
	for _, want := range []string{"state/outbox.db", "no space left on device", "the file is kept as it is", "nothing was stored", "without --durable still works"} {
		assert.Contains(t, r.Detail, want)
	}
	assert.False(t, stored)
	assert.Empty(t, s.inflight)
}
