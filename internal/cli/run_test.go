package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// fakeNode is an app.Node that lists and shows what it is given; any
// other call panics (the nil app.Node it embeds).
type fakeNode struct {
	app.Node
	host    domain.Dest
	listing wire.Listing
	err     error
	show    wire.Show
}

func (n fakeNode) Host() domain.Dest { return n.host }

func (n fakeNode) List(context.Context, wire.ListQuery) (wire.Listing, error) {
	return n.listing, n.err
}

func (n fakeNode) Show(context.Context, string) (wire.Show, error) { return n.show, n.err }

// testStreams are streams over buffers, no terminal, no colour.
func testStreams() (*iostreams, *strings.Builder, *strings.Builder) {
	var out, errb strings.Builder
	return newIOStreams(strings.NewReader(""), &out, &errb, func(string) string { return "" }), &out, &errb
}

// TestRunListWithoutCobra: a run function is called with its options
// alone (no cobra, no graph): list over two nodes prints a HOST column,
// and a host that could not be reached is a warning and exit 10.
func TestRunListWithoutCobra(t *testing.T) {
	dev, err := domain.ParseDest("dev-box")
	require.NoError(t, err)
	nodes := map[domain.Dest]app.Node{
		{}:  fakeNode{listing: wire.Listing{Sessions: []wire.Session{{Name: "here-1", SessionID: "11111111-aaaa", Harness: "claude-code", PID: 7, Status: "idle", Addressable: true}}}},
		dev: fakeNode{host: dev, err: domain.Refuse(domain.ReasonHostUnreachable, "ssh: no route")},
	}
	ios, out, errb := testStreams()
	opts := &listOptions{io: ios, dests: []domain.Dest{{}, dev}, nodes: func(dests []domain.Dest) ([]app.Node, error) {
		var got []app.Node
		for _, d := range dests {
			got = append(got, nodes[d])
		}
		return got, nil
	}}
	err = runList(t.Context(), opts)
	var se silentError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, wire.ExitHostUnreachable, se.code)
	assert.True(t, strings.HasPrefix(out.String(), "HOST"), "a HOST column: %q", out.String())
	assert.Contains(t, out.String(), "here-1")
	assert.Contains(t, errb.String(), "dev-box")

	// One node alone that failed ends the command as that failure.
	opts.dests = []domain.Dest{dev}
	_, ok := domain.AsRefusal(runList(t.Context(), opts))
	assert.True(t, ok)
}

// TestRunShowWithoutCobra: show prints the node's document, as JSON with
// json set.
func TestRunShowWithoutCobra(t *testing.T) {
	ios, out, _ := testStreams()
	node := fakeNode{show: wire.Show{Session: wire.Session{Name: "proj-89", SessionID: "26df9a5b", Verdict: "live"}}}
	opts := &showOptions{io: ios, address: "proj-89", json: true, node: func(domain.Dest) (app.Node, error) { return node, nil }}
	require.NoError(t, runShow(t.Context(), opts))
	assert.Contains(t, out.String(), `"name": "proj-89"`)

	ios, out, _ = testStreams()
	opts.io, opts.json = ios, false
	require.NoError(t, runShow(t.Context(), opts))
	assert.Contains(t, out.String(), "proj-89")
	assert.Contains(t, out.String(), "verdict:")
}
