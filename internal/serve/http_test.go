package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/testproc"
)

// TestBoundAddr: the page is served as the address given with the port
// bound (an unspecified one named by this machine's host name), and only
// a loopback one is loopback.
func TestBoundAddr(t *testing.T) {
	name, err := os.Hostname()
	require.NoError(t, err)
	for _, tc := range []struct {
		given string
		got   net.IP
		want  string
		loop  bool
	}{
		{"127.0.0.1:0", net.IPv4(127, 0, 0, 1), "127.0.0.1:4711", true},
		{"[::1]:0", net.IPv6loopback, "[::1]:4711", true},
		{"localhost:4711", net.IPv4(127, 0, 0, 1), "localhost:4711", true},
		{"0.0.0.0:4711", net.IPv4zero, net.JoinHostPort(name, "4711"), false},
		{":4711", net.IPv6unspecified, net.JoinHostPort(name, "4711"), false},
		{"192.168.1.5:4711", net.IPv4(192, 168, 1, 5), "192.168.1.5:4711", false},
	} {
		t.Run(tc.given, func(t *testing.T) {
			addr, loop := boundAddr(tc.given, &net.TCPAddr{IP: tc.got, Port: 4711})
			assert.Equal(t, tc.want, addr)
			assert.Equal(t, tc.loop, loop)
		})
	}
}

// TestExposedDashboardSaysSo: bound to every address, the service warns
// on stderr and the page's data names the address, for its banner; bound
// to loopback, neither.
func TestExposedDashboardSaysSo(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		exposed bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		t.Run(tc.addr, func(t *testing.T) {
			var errb testproc.Buffer
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := newServer(ctx, Options{Log: &errb, HTTP: tc.addr})
			require.NoError(t, s.startHTTP())
			log := errb.String()
			m := regexp.MustCompile(`dashboard on (http://(\S+)/\?token=([0-9a-f]+))`).FindStringSubmatch(log)
			require.NotNil(t, m, log)
			assert.Equal(t, tc.exposed, strings.Contains(log, "WARNING: the dashboard listens on"), log)
			_, port, err := net.SplitHostPort(m[2])
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+port+"/api/state", nil)
			require.NoError(t, err)
			req.Host = m[2]
			req.AddCookie(&http.Cookie{Name: "peerctl-" + port, Value: m[3]})
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer func() { _ = res.Body.Close() }()
			require.Equal(t, http.StatusOK, res.StatusCode)
			var st struct {
				Exposed string `json:"exposed"`
			}
			require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
			if tc.exposed {
				assert.Equal(t, m[2], st.Exposed, "the banner names the address")
			} else {
				assert.Empty(t, st.Exposed)
			}
		})
	}
}

// TestDashboardPagesTheOutbox: the page's Messages are the outbox's own
// query: a page of Limit, the next one before the oldest id shown, and
// a state word, which the carried sends answer too.
func TestDashboardPagesTheOutbox(t *testing.T) {
	ctx := context.Background()
	st, err := outbox.Open(ctx, filepath.Join(t.TempDir(), "state", outbox.FileName))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	var ids []int64
	for i := range 5 {
		m, _, err := st.Put(ctx, ports.OutboxMessage{Address: "proj-89", Text: fmt.Sprint("text ", i), Created: at.Add(time.Duration(i) * time.Second),
			Expires: at.Add(time.Hour), NextAt: at})
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	_, err = st.Move(ctx, ids[1], []domain.OutboxState{domain.OutboxStored}, ports.OutboxChange{State: domain.OutboxCancelled, At: at})
	require.NoError(t, err)
	s := newServer(ctx, Options{})
	s.store = st
	s.carry(carriedSend{address: "ghost", started: at.Add(time.Minute), err: domain.Refuse(domain.ReasonNotLive, "no live session is named ghost")})
	b := webBackend{s: s}
	got := func(q dashboard.MessageQuery) []string {
		t.Helper()
		ms, err := b.Messages(ctx, q)
		require.NoError(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprint(m.ID, " ", m.State))
		}
		return out
	}
	assert.Equal(t, []string{"0 refused", "5 stored", "4 stored"}, got(dashboard.MessageQuery{Limit: 2}), "the newest page, the carried send beside it")
	assert.Equal(t, []string{"3 stored", "2 cancelled"}, got(dashboard.MessageQuery{Limit: 2, Before: 4}))
	assert.Equal(t, []string{"1 stored"}, got(dashboard.MessageQuery{Limit: 2, Before: 2}))
	assert.Equal(t, []string{"2 cancelled"}, got(dashboard.MessageQuery{Limit: 2, State: "cancelled"}), "the state, over the whole outbox")
	assert.Equal(t, []string{"0 refused"}, got(dashboard.MessageQuery{State: "refused"}))
	assert.Empty(t, got(dashboard.MessageQuery{State: "failed", Before: 3}), "a plain send's word, past the first page")
	// Count: the outbox's messages in the state, on every page (the M
	// of "the newest N of M"), the carried sends aside.
	for q, want := range map[dashboard.MessageQuery]int{{Limit: 2}: 5, {Limit: 2, Before: 4}: 5, {State: "stored"}: 4, {State: "refused"}: 0, {State: "failed"}: 0} {
		n, err := b.Count(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, want, n, "%+v", q)
	}
}
