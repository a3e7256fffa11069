package natsbus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/natstest"
)

// A node's credentials can neither make the fleet's streams (choosing
// where they republish what they hold) nor change, purge or delete them:
// a service under them that finds one missing says what the operator
// runs, and the operator's step (Setup, with the operator's key) makes
// both, checks them when run again, and then the nodes work.
func TestOnlyTheOperatorMakesTheFleetsStreams(t *testing.T) {
	url, keys := bareFleetServer(t, "alpha", "beta.lan")
	ctx := context.Background()
	alpha, _ := connectAs(t, url, keys, "alpha")

	_, err := alpha.Join(ctx, member("alpha", "o1"))
	assert.ErrorIs(t, err, ErrNotSetUp)
	assert.ErrorContains(t, err, "peerctl policy nats-setup")
	err = alpha.PostMail(ctx, "beta.lan", "alpha", order("k1", "hello"), 0)
	assert.ErrorIs(t, err, ErrNotSetUp)

	spy := mailStreamConfig()
	spy.Replicas = 1
	spy.RePublish = &jetstream.RePublish{Source: InboxSubject("*", "*"), Destination: "peerctl.v1.req.alpha.{{wildcard(1)}}"}
	_, err = alpha.js.CreateStream(ctx, spy)
	assert.Error(t, err, "a node makes the mail stream")
	kv := presenceConfig()
	kv.Replicas, kv.TTL, kv.LimitMarkerTTL = 1, 0, 0
	_, err = alpha.js.CreateKeyValue(ctx, kv)
	assert.Error(t, err, "a node makes the presence bucket")

	op := connectOperator(t, url, keys)
	made, found, err := op.Setup(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"stream " + MailStream, "bucket " + PresenceBucket}, made)
	assert.Empty(t, found)
	made, found, err = op.Setup(ctx)
	require.NoError(t, err)
	assert.Empty(t, made)
	assert.Equal(t, []string{"stream " + MailStream, "bucket " + PresenceBucket}, found)

	_, err = alpha.js.UpdateStream(ctx, spy)
	assert.Error(t, err, "a node changes the mail stream")
	assert.Error(t, alpha.js.DeleteStream(ctx, PresenceStream), "a node deletes the presence bucket")
	s, err := alpha.js.Stream(ctx, MailStream)
	require.NoError(t, err)
	assert.Error(t, s.Purge(ctx), "a node purges the mail")
	assert.Nil(t, s.CachedInfo().Config.RePublish)

	_, err = alpha.Join(ctx, member("alpha", "o1"))
	require.NoError(t, err)
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k1", "hello"), 0))
}

// A service refuses a fleet stream that is not peerctl's, made on an
// open bus (or with a leaked operator's key): one that republishes the
// mail, one that also holds every node's requests, a presence bucket
// whose keys never expire. The operator's step refuses them too.
func TestATamperedStreamIsRefused(t *testing.T) {
	for name, tamper := range map[string]func(*jetstream.StreamConfig){
		"republish": func(c *jetstream.StreamConfig) {
			c.RePublish = &jetstream.RePublish{Source: InboxSubject("*", "*"), Destination: "peerctl.v1.req.alpha.{{wildcard(1)}}"}
		},
		"requests": func(c *jetstream.StreamConfig) { c.Subjects = append(c.Subjects, RequestSubject("*", "*")) },
		"short":    func(c *jetstream.StreamConfig) { c.MaxAge, c.Duplicates, c.MaxMsgs = time.Second, time.Second, 1 },
	} {
		t.Run(name, func(t *testing.T) {
			bus := connect(t, natstest.Start(t))
			ctx := context.Background()
			c := mailStreamConfig()
			c.Replicas = 1
			tamper(&c)
			_, err := bus.js.CreateStream(ctx, c)
			require.NoError(t, err)
			err = bus.PostMail(ctx, "beta.lan", "alpha", order("k1", "secret"), 0)
			assert.ErrorIs(t, err, ErrTampered)
			_, err = bus.TakeMail(ctx, "beta.lan", newBox(), time.Second, func(string) {})
			assert.ErrorIs(t, err, ErrTampered)
			_, _, err = bus.Setup(ctx)
			assert.ErrorIs(t, err, ErrTampered)
		})
	}
	t.Run("presence without a TTL", func(t *testing.T) {
		bus := connect(t, natstest.Start(t))
		ctx := context.Background()
		_, err := bus.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: PresenceBucket, History: 1})
		require.NoError(t, err)
		_, err = bus.Join(ctx, member("alpha", "o1"))
		assert.ErrorIs(t, err, ErrTampered)
		assert.ErrorContains(t, err, "max age 0s")
	})
}

// checkStream names every field that differs, and takes peerctl's own.
func TestCheckStreamNamesWhatDiffers(t *testing.T) {
	want := mailStreamConfig()
	require.NoError(t, checkStream(MailStream, want, want))
	got := want
	got.Subjects = []string{">"}
	got.Mirror = &jetstream.StreamSource{Name: "x"}
	got.Storage = jetstream.MemoryStorage
	err := checkStream(MailStream, got, want)
	assert.ErrorIs(t, err, ErrTampered)
	for _, s := range []string{`subjects [">"]`, "a mirror of x", "storage Memory"} {
		assert.ErrorContains(t, err, s)
	}
	require.NoError(t, checkStream(PresenceStream, wantPresence(), wantPresence()))
}
