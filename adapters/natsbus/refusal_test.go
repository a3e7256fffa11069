package natsbus

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// A machine given another node's seed (or none of the bus's) is refused
// by the servers; the calls that then run out of time say so, naming the
// refusal, not "context deadline exceeded" alone: joining, posting mail,
// reading the fleet.
func TestARefusalIsNotCalledATimeout(t *testing.T) {
	url, keys := fleetServer(t, "alpha", "bravo")
	ctx := context.Background()
	b, err := Connect(Settings{URLs: url, Creds: filepath.Join(keys, "bravo.nk"), Node: "alpha", Name: "alpha", Timeout: 2 * time.Second}, false)
	require.NoError(t, err)
	t.Cleanup(b.Close)

	_, err = b.Join(ctx, member("alpha", "o1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permissions violation", "join")
	err = b.PostMail(ctx, "bravo", "alpha", wire.SendOrder{Query: wire.SendQuery{Address: "api", Text: "x"}, Key: "k1", Durable: time.Minute}, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permissions violation", "mail")
	_, err = b.Fleet(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "permissions violation", "fleet")
}
