package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

func TestServerStatus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := outbox.Open(ctx, filepath.Join(dir, outbox.FileName))
	require.NoError(t, err)
	defer st.Close()
	for _, k := range []string{"a", "b"} {
		_, _, err := st.Put(ctx, ports.OutboxMessage{Key: k, Address: "reviewer", Text: "hi", Request: []byte(`{}`), Created: time.Now(), Expires: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	s := newServer(ctx, Options{Paths: Paths{StateDir: dir, DB: filepath.Join(dir, outbox.FileName), Socket: "/run/x.sock"}, IdleExit: 10 * time.Minute, Retention: 720 * time.Hour})
	s.store, s.started = st, time.Now().Add(-90*time.Second)
	s.warm = map[string]*warmSet{"k1": {w: app.NewWarm(ctx), uses: 1}, "k2": {w: app.NewWarm(ctx)}}
	got := s.status()
	assert.True(t, got.Running)
	assert.Equal(t, os.Getpid(), got.PID)
	assert.Equal(t, dir, got.StateDir)
	assert.Equal(t, "/run/x.sock", got.Socket)
	assert.GreaterOrEqual(t, got.UptimeSeconds, int64(90))
	assert.Equal(t, int64(600), got.IdleExitSeconds)
	assert.Equal(t, int64(720*3600), got.RetentionSeconds)
	assert.Equal(t, 2, got.Messages["stored"])
	assert.Len(t, got.Messages, len(domain.OutboxStates()), "every state, 0 for none")
	assert.Equal(t, Warm{Sets: 2, InUse: 1}, got.Warm)

	s.storeErr, s.store = OutboxUnavailable(os.ErrPermission), nil
	got = s.status()
	assert.Contains(t, got.OutboxError, "permission denied")
	assert.Zero(t, got.Messages["stored"])
}
