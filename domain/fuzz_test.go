package domain_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// FuzzEndpointRoundTrip: any pid, name and socket bytes that NewEndpoint
// accepts format to a string that parses back to the same parts.
func FuzzEndpointRoundTrip(f *testing.F) {
	seeds := []struct {
		pid          uint32
		name, socket string
	}{
		{4652, "proj-89", "/tmp/cc-socks/4652.sock"},                      // fixture registry/4652.json
		{5031, "build:main 50% \u00fcn\u00ef", "/tmp/cc-socks/5031.sock"}, // fixture registry/5031.json
		{1, "%3a", "%3A"},
		{1, "%253A", "a:b:c"},
		{1, "%", ":"},
		{1, "\xff\xfe", "/tmp/\x00sock"},
		{4294967295, "名前", `\\.\pipe\x`},
		{7, "/leading", "%%%"},
		{8, "a\nb\x1b[2J\u202e\u0085\x7f", "/tmp/\u2028.sock"},
	}
	for _, s := range seeds {
		f.Add(s.pid, s.name, s.socket)
	}
	f.Fuzz(func(t *testing.T, pid uint32, name, socket string) {
		ep, err := domain.NewStandInEndpoint(int(pid), name, socket)
		if err != nil {
			assert.True(t, pid == 0 || name == "" || socket == "", "NewEndpoint(%d, %q, %q) refused valid parts: %v", pid, name, socket, err)
			return
		}
		s := ep.String()
		require.True(t, strings.HasPrefix(s, domain.StandInPrefix), "String() = %q", s)
		assert.True(t, utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }),
			"String() = %q holds a character that is not printable", s)
		back, err := domain.ParseEndpoint(s)
		require.NoError(t, err, "ParseEndpoint(%q) of NewEndpoint(%d, %q, %q)", s, pid, name, socket)
		assert.Equal(t, int(pid), back.PID())
		assert.Equal(t, name, back.Name())
		assert.Equal(t, socket, back.Socket())
		assert.Equal(t, s, back.String())
	})
}

// FuzzParseEndpoint: an arbitrary string is rejected (with ErrBadEndpoint)
// or round-trips byte for byte; it never panics.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock",
		"cc-peer:v1:5031:build%3Amain 50%25 \u00fcn\u00ef:/tmp/cc-socks/5031.sock",
		"cc-peer:v1:1:%3a:x",
		"cc-peer:v1:01:a:b",
		"cc-peer:v1:4294967296:a:b",
		"cc-peer:v1:+1:a:b",
		"cc-peer:v2:1:a:b",
		"cc-peer:v1:1:a:b:c",
		"cc-peer:v1:1::b",
		"cc-peer:v1:1:a:%",
		"cc-peer:v1:1:a:%2",
		"cc-peer:v1:1:\xff:\x00",
		"cc-peer:v1:1:a%0Ab%C2%85:%E2%80%AE",
		"cc-peer:v1:1:%C3%BC:x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := domain.ParseEndpoint(s)
		if err != nil {
			assert.ErrorIs(t, err, domain.ErrBadEndpoint)
			assert.True(t, ep.IsZero(), "a rejected endpoint must be the zero value")
			return
		}
		assert.Equal(t, s, ep.String(), "accepted endpoint must round-trip byte for byte")
		assert.Positive(t, ep.PID())
		assert.NotEmpty(t, ep.Name())
		assert.NotEmpty(t, ep.Socket())
		// An accepted endpoint is one line of printable text, whatever bytes
		// its parts hold (those are %XX).
		assert.True(t, utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }),
			"accepted endpoint %q holds a character that is not printable", s)
	})
}
