package natsbus

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/natstest"
)

func TestASingleServerKeepsOneReplica(t *testing.T) {
	b := connect(t, natstest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := b.mailStream(ctx)
	require.NoError(t, err, "a single server refuses R3 (10074): the stream is made with one replica")
	assert.Equal(t, 1, s.CachedInfo().Config.Replicas)
	_, err = b.presence(ctx, true)
	require.NoError(t, err)
	kv, err := b.js.Stream(ctx, "KV_"+PresenceBucket)
	require.NoError(t, err)
	assert.Equal(t, 1, kv.CachedInfo().Config.Replicas)
}

// fakeJetStream answers the JetStream API on a server without it: no
// stream exists, and a stream created with more than one replica is
// refused with err (a JSON API error), one replica made. It returns the
// replicas of each create asked, in order.
func fakeJetStream(t *testing.T, url, apiErr string) func() []int {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	var creates []int
	_, err = nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
		switch {
		case m.Subject == "$JS.API.INFO":
			_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.account_info_response","memory":0,"storage":0,"streams":0,"consumers":0,"limits":{},"api":{"level":1,"total":0,"errors":0}}`))
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.INFO."):
			_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":404,"err_code":10059,"description":"stream not found"}}`))
		case strings.HasPrefix(m.Subject, "$JS.API.STREAM.CREATE."):
			var cfg map[string]any
			_ = json.Unmarshal(m.Data, &cfg)
			n, _ := cfg["num_replicas"].(float64)
			mu.Lock()
			creates = append(creates, int(n))
			mu.Unlock()
			if n > 1 {
				_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.stream_create_response","error":` + apiErr + `}`))
				return
			}
			c, _ := json.Marshal(cfg)
			_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.stream_create_response","config":` + string(c) +
				`,"created":"2026-12-07T00:00:00Z","state":{"messages":0,"bytes":0,"first_seq":0,"last_seq":0,"consumer_count":0}}`))
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), creates...)
	}
}

func TestOnlyTooFewServersFallBackToOneReplica(t *testing.T) {
	for _, c := range []struct {
		name, err string
		creates   []int
		says      string
	}{
		{"too few servers in a cluster", `{"code":400,"err_code":10005,"description":"no suitable peers for placement"}`, []int{3, 1}, ""},
		{"insufficient resources", `{"code":503,"err_code":10023,"description":"insufficient resources"}`, []int{3, 1}, ""},
		{"JetStream not answering now", `{"code":503,"err_code":10008,"description":"JetStream system temporarily unavailable"}`, []int{3},
			"JetStream system temporarily unavailable"},
		{"a permission refused", `{"code":403,"err_code":10003,"description":"bad request"}`, []int{3}, "bad request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, what := range []string{"mail stream", "presence bucket"} {
				url := natstest.StartPlain(t)
				creates := fakeJetStream(t, url, c.err)
				b := connect(t, url)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var err error
				if what == "mail stream" {
					_, err = b.mailStream(ctx)
				} else {
					_, err = b.presence(ctx, true)
				}
				cancel()
				assert.Equal(t, c.creates, creates(), what)
				if c.says == "" {
					assert.NoError(t, err, what)
					continue
				}
				require.Error(t, err, what+": another error is reported, nothing made with one replica")
				assert.Contains(t, err.Error(), c.says, what)
			}
		})
	}
}
