package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/transporttest"
)

type named struct {
	transporttest.Fake
	name string
}

func (n *named) Name() string { return n.name }

func TestRouterPicksByHarness(t *testing.T) {
	courier, socket, inbox := &named{name: "courier"}, &named{name: "socket"}, &named{name: "inbox"}
	by := map[domain.Harness][]ports.Transport{
		domain.HarnessClaudeCode: {courier, socket},
		qwenregistry.Kind:        {inbox},
	}
	claude := transporttest.Session(t, domain.Record{File: "1.json", PID: 1, SessionID: "c", Name: "c", SocketPath: "/c.sock", Kind: domain.KindInteractive})
	qwen := transporttest.Session(t, domain.Record{Harness: qwenregistry.Kind, File: "2.json", PID: 2, SessionID: "q", Name: "q", SocketPath: "/q.sock", Kind: "tui"})
	msg, err := domain.NewMessage("hi")
	require.NoError(t, err)
	cases := []struct {
		chosen string
		target domain.Session
		want   *named
	}{
		{"", claude, courier}, {"", qwen, inbox}, {"socket", claude, socket}, {"inbox", qwen, inbox},
		{"inbox", claude, nil}, {"courier", qwen, nil}, {"socket", qwen, nil},
	}
	for _, c := range cases {
		r := &app.Router{Chosen: c.chosen, By: by}
		before := len(courier.Received()) + len(socket.Received()) + len(inbox.Received())
		_, err := r.Deliver(context.Background(), c.target, msg)
		if c.want == nil {
			ref, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, domain.ReasonHarnessUnsupported, ref.Reason, "%s to %s", c.chosen, c.target.Harness())
			assert.Equal(t, before, len(courier.Received())+len(socket.Received())+len(inbox.Received()), "nothing ran")
			_, err = r.Plan(c.target, msg)
			ref, _ = domain.AsRefusal(err)
			require.NotNil(t, ref)
			assert.Equal(t, domain.ReasonHarnessUnsupported, ref.Reason)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, before+1, len(courier.Received())+len(socket.Received())+len(inbox.Received()))
		assert.NotEmpty(t, c.want.Received(), "%q to %s went through %s", c.chosen, c.target.Harness(), c.want.name)
	}
}

// sharingRegistry asks its read's scope for a value, as the registries that
// walk the process table do (procliveness.TableOf), and keeps what it got.
type sharingRegistry struct {
	built *int
	got   *[]*int
}

type sharedKey struct{}

func (r sharingRegistry) Read(ctx context.Context) (ports.Snapshot, error) {
	v := ports.Scoped(ctx, sharedKey{}, func() *int { *r.built++; return new(int) })
	*r.got = append(*r.got, v)
	return ports.Snapshot{}, nil
}

// The registries of one read share what they ask of its scope (one pass
// over the process table for every harness); the next read builds it
// afresh, so that a watch never lists from a stale table.
func TestRegistriesShareOneScopePerRead(t *testing.T) {
	built, got := 0, []*int{}
	rs := app.Registries{sharingRegistry{&built, &got}, sharingRegistry{&built, &got}}
	_, err := rs.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, built, "two registries of one read share one value")
	_, err = rs.ReadMatching(context.Background(), func(names []string) []string { return names })
	require.NoError(t, err)
	assert.Equal(t, 2, built, "the next read builds its own")
	require.Len(t, got, 4)
	assert.Same(t, got[0], got[1])
	assert.Same(t, got[2], got[3])
	assert.NotSame(t, got[1], got[2])
}
