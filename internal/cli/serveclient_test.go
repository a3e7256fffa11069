package cli

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports/wire"
)

// dyingService reads one request, says the message is stored when stored
// is not nil, and goes away without an answer (as a service killed with
// kill -9 between reading a request and answering it does).
func dyingService(t *testing.T, stored *serve.Ref) *net.UnixConn {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer conn.Close()
		var req serve.Request
		if serve.ReadLine(bufio.NewReader(conn), &req) == nil && stored != nil {
			_ = serve.WriteLine(conn, serve.Answer{Stored: stored})
		}
	}()
	conn, err := dialUnix(path)
	require.NoError(t, err)
	return conn
}

// A client whose service goes away after the request was written says
// outcome_unknown with what to look at: the message's id when the service
// said it stored it, else the address and the key (exact, escaped); never
// that nothing was stored.
func TestClientOfADyingServiceSaysOutcomeUnknown(t *testing.T) {
	c := newFactory(strings.NewReader(""), nil, nil, func(string) string { return "" })
	order := &wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "hi"}, Durable: time.Hour, Key: "k\xff1"}
	for _, tc := range []struct {
		name   string
		stored *serve.Ref
		order  *wire.SendOrder
		want   []string
	}{
		{"stored", &serve.Ref{ID: 7}, order, []string{"stored the message as 7", "peerctl outbox show 7"}},
		{"not yet stored", nil, order, []string{"peerctl outbox --target reviewer", `key "k\xff1"`}},
		{"plain", nil, &wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: "hi"}}, []string{"sending again may deliver it twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.serveClient().ask(context.Background(), dyingService(t, tc.stored), serve.Request{Op: "send", Send: tc.order})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
			for _, w := range tc.want {
				assert.Contains(t, r.Detail, w)
			}
			assert.NotContains(t, r.Detail, "nothing was stored")
		})
	}
}
