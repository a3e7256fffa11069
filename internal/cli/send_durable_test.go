package cli

import (
	"bytes"
	"context"
	"strings"
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

// A durable send while the disk is full is refused with outbox_unavailable,
// naming the file and the cause and saying a plain send still works; it
// sends nothing (svc is nil: no transport is reached).
func TestDurableSendOnAFullDiskIsRefused(t *testing.T) {
	var out, errb bytes.Buffer
	c := newCLI(strings.NewReader(""), &out, &errb, func(string) string { return "" })
	c.environ = func() []string { return nil }
	c.srv = &server{ob: app.NewOutbox(fullOutbox{path: "state/outbox.db"}, nil), inflight: map[int64]bool{}, wake: make(chan struct{}, 1)}
	err := c.sendDurable(context.Background(), c.localWay(nil, app.SendRequest{Address: "reviewer", Text: "the nightly build broke"}, true),
		"the nightly build broke", durableFlags{ttl: time.Hour}, true)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutboxUnavailable, r.Reason)
	assert.Equal(t, wire.ExitOutboxUnavailable, wire.ExitCode(r.Reason))
	for _, want := range []string{"state/outbox.db", "no space left on device", "the file is kept as it is", "nothing was stored", "without --durable still works"} {
		assert.Contains(t, r.Detail, want)
	}
	assert.Empty(t, out.String())
	assert.Empty(t, c.srv.inflight)
}
