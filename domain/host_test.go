package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestParseDest(t *testing.T) {
	for _, ok := range []string{"box", "alice@build-3.example.com", "[::1]", "host%2", "dev:22", "ünï@名前"} {
		d, err := domain.ParseDest(ok)
		require.NoError(t, err, ok)
		assert.Equal(t, ok, d.String())
		assert.False(t, d.IsLocal())
	}
	for name, bad := range map[string]string{
		"empty":         "",
		"this machine":  ".",
		"option":        "-oProxyCommand=touch x",
		"bare option":   "-p",
		"space":         "a b",
		"tab":           "a\tb",
		"newline":       "box\n",
		"escape":        "box\x1b[2J",
		"nbsp":          "box\u00a0x",
		"bidi override": "box\u202e",
		"not utf-8":     "box\xff",
		"too long":      strings.Repeat("a", domain.MaxDestBytes+1),
		"at alone":      "@",
		"no host":       "alice@",
		"no user":       "@box",
	} {
		_, err := domain.ParseDest(bad)
		assert.ErrorIs(t, err, domain.ErrBadDest, name)
	}
	assert.True(t, domain.Dest{}.IsLocal())
}

func TestHostEndpoint(t *testing.T) {
	inner := mustEndpoint(t, 4652, "a:b/c%d", "/tmp/s:x%/4652.sock")
	dest, err := domain.ParseDest("me@box:22%")
	require.NoError(t, err)
	s := domain.HostEndpoint(dest, inner)
	assert.Equal(t, "ssh:v1:me@box%3A22%25:"+inner, s)
	got, ep, ok, err := domain.SplitHostEndpoint(s)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, dest, got)
	assert.Equal(t, inner, ep)
	parsed, err := domain.ParseEndpoint(ep)
	require.NoError(t, err)
	assert.Equal(t, "a:b/c%d", parsed.Name())
	assert.Equal(t, "/tmp/s:x%/4652.sock", parsed.Socket())

	assert.Equal(t, inner, domain.HostEndpoint(domain.Dest{}, inner), "this machine's endpoints stay as they are")
	assert.Equal(t, "", domain.HostEndpoint(dest, ""), "no endpoint stays none")

	_, _, ok, err = domain.SplitHostEndpoint(inner)
	assert.False(t, ok)
	assert.NoError(t, err)
	for name, bad := range map[string]string{
		"version":         "ssh:v2:box:" + inner,
		"no endpoint":     "ssh:v1:box",
		"bad endpoint":    "ssh:v1:box:cc-peer:v1:0:a:b",
		"raw colon dest":  "ssh:v1::" + inner,
		"option dest":     "ssh:v1:-oProxyCommand=x:" + inner,
		"space dest":      "ssh:v1:a b:" + inner,
		"lower-case hex":  "ssh:v1:box%3a22:" + inner,
		"needless escape": "ssh:v1:bo%78:" + inner,
		"nested host":     "ssh:v1:a:ssh:v1:b:" + inner,
	} {
		_, _, ok, err := domain.SplitHostEndpoint(bad)
		assert.True(t, ok, name)
		assert.True(t, errors.Is(err, domain.ErrBadEndpoint), "%s: %v", name, err)
	}
}

func mustEndpoint(t *testing.T, pid int, name, socket string) string {
	t.Helper()
	ep, err := domain.NewStandInEndpoint(pid, name, socket)
	require.NoError(t, err)
	return ep.String()
}

// FuzzHostEndpointRoundTrip: any Dest and endpoint HostEndpoint joins
// split back to the same two, and any string SplitHostEndpoint accepts
// joins back to itself byte for byte.
func FuzzHostEndpointRoundTrip(f *testing.F) {
	f.Add("box", uint32(4652), "proj-89", "/tmp/cc-socks/4652.sock")
	f.Add("me@h:22%", uint32(1), "a:b%c/d", "/x:y%z")
	f.Add("[::1]", uint32(7), "\n\x1b", "\xff")
	f.Fuzz(func(t *testing.T, dest string, pid uint32, name, socket string) {
		d, err := domain.ParseDest(dest)
		if err != nil {
			return
		}
		ep, err := domain.NewStandInEndpoint(int(pid), name, socket)
		if err != nil {
			return
		}
		s := domain.HostEndpoint(d, ep.String())
		got, inner, ok, err := domain.SplitHostEndpoint(s)
		require.NoError(t, err, s)
		require.True(t, ok)
		assert.Equal(t, d, got)
		assert.Equal(t, ep.String(), inner)
		assert.NotContains(t, s, "\n")
		// And from the other side: what parses formats back.
		if got2, inner2, ok2, err2 := domain.SplitHostEndpoint(dest); ok2 && err2 == nil {
			assert.Equal(t, dest, domain.HostEndpoint(got2, inner2))
		}
	})
}

// A node of the fleet's bus is a Dest "nats:NODE" whose name is a node's;
// its sessions' endpoints are nats:v1:NODE:<endpoint>, split back to the
// same two.
func TestNodeDestAndEndpoint(t *testing.T) {
	d, err := domain.ParseDest("nats:dev-box.lan")
	require.NoError(t, err)
	node, ok := d.Node()
	assert.True(t, ok)
	assert.Equal(t, "dev-box.lan", node)
	n2, err := domain.NodeDest("dev-box.lan")
	require.NoError(t, err)
	assert.Equal(t, d, n2)
	_, ok = domain.Dest{}.Node()
	assert.False(t, ok)
	box, _ := domain.ParseDest("box")
	_, ok = box.Node()
	assert.False(t, ok)
	for _, bad := range []string{"nats:", "nats:a b", "nats:-x", "nats:a..b", "nats:a:b", "nats:" + strings.Repeat("a", 65)} {
		_, err := domain.ParseDest(bad)
		assert.ErrorIs(t, err, domain.ErrBadDest, bad)
		assert.ErrorIs(t, err, domain.ErrBadNode, bad)
	}

	inner := mustEndpoint(t, 4652, "a:b", "/tmp/s/4652.sock")
	s := domain.HostEndpoint(d, inner)
	assert.Equal(t, "nats:v1:dev-box.lan:"+inner, s)
	got, ep, ok, err := domain.SplitHostEndpoint(s)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, d, got)
	assert.Equal(t, inner, ep)
	for name, bad := range map[string]string{
		"version":     "nats:v2:box:" + inner,
		"no endpoint": "nats:v1:box",
		"bad node":    "nats:v1:-box:" + inner,
		"nested":      "nats:v1:a:nats:v1:b:" + inner,
		"ssh inside":  "nats:v1:a:ssh:v1:b:" + inner,
	} {
		_, _, ok, err := domain.SplitHostEndpoint(bad)
		assert.True(t, ok, name)
		assert.ErrorIs(t, err, domain.ErrBadEndpoint, name)
	}
}

func TestParseNode(t *testing.T) {
	for _, ok := range []string{"alpha", "dev-box.example.com", "ci_runner-3", "A1"} {
		_, err := domain.ParseNode(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", ".x", "-x", "x.", "a..b", "a b", "a:b", "a*", "a>", "ä", strings.Repeat("a", 65), "a\x1b[2J"} {
		_, err := domain.ParseNode(bad)
		assert.ErrorIs(t, err, domain.ErrBadNode, "%q", bad)
	}
}

// nats: is a scheme: written in any case it names a node of the fleet's
// bus, never an ssh host named "NATS:B".
func TestParseDestTakesNatsInAnyCase(t *testing.T) {
	for _, s := range []string{"NATS:b", "Nats:b", "nAtS:b"} {
		d, err := domain.ParseDest(s)
		require.NoError(t, err, s)
		assert.Equal(t, "nats:b", d.String())
		node, ok := d.Node()
		assert.True(t, ok, s)
		assert.Equal(t, "b", node)
	}
	_, err := domain.ParseDest("NATS:a b")
	assert.ErrorIs(t, err, domain.ErrBadDest)
}
