package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestEndpointRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		pid    int
		ename  string
		socket string
		want   string
	}{
		{"plain", 4652, "proj-89", "/tmp/cc-socks/4652.sock", "cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock"},
		{"colon in name", 1, "a:b", "/s", "cc-peer:v1:1:a%3Ab:/s"},
		{"percent in name", 2, "50%", "/s", "cc-peer:v1:2:50%25:/s"},
		{"percent then colon", 3, "%:", "/s", "cc-peer:v1:3:%25%3A:/s"},
		{"literal escape text in name", 4, "%3A", "/s", "cc-peer:v1:4:%253A:/s"},
		{"spaces", 5, "my session  two", "/s", "cc-peer:v1:5:my session  two:/s"},
		{"non-ASCII", 6, "ünï ☃", "/s", "cc-peer:v1:6:ünï ☃:/s"},
		{"the measured name", 5031, "build:main 50% ünï", "/tmp/cc-socks/5031.sock", "cc-peer:v1:5031:build%3Amain 50%25 ünï:/tmp/cc-socks/5031.sock"},
		{"colon and percent in socket", 7, "n", "/tmp/a:b%c.sock", "cc-peer:v1:7:n:/tmp/a%3Ab%25c.sock"},
		{"max pid", 4294967295, "n", "/s", "cc-peer:v1:4294967295:n:/s"},
		// Characters that are not printable leave as %XX of their bytes:
		// an endpoint is one line of printable text (jq -r prints it as is).
		{"newline in name", 8, "a\nb", "/s", "cc-peer:v1:8:a%0Ab:/s"},
		{"escape sequence", 9, "\x1b[31mred\x1b[0m", "/s", "cc-peer:v1:9:%1B[31mred%1B[0m:/s"},
		{"DEL", 10, "a\x7f", "/s", "cc-peer:v1:10:a%7F:/s"},
		{"C1 control NEL", 11, "a\u0085b", "/s", "cc-peer:v1:11:a%C2%85b:/s"},
		{"C1 CSI", 12, "\u009b31m", "/s", "cc-peer:v1:12:%C2%9B31m:/s"},
		{"bidi override", 13, "abc\u202edcba", "/s", "cc-peer:v1:13:abc%E2%80%AEdcba:/s"},
		{"line separator", 14, "a\u2028b", "/s", "cc-peer:v1:14:a%E2%80%A8b:/s"},
		{"not UTF-8", 15, "a\xffb", "/s", "cc-peer:v1:15:a%FFb:/s"},
		{"tab and NUL in socket", 16, "n", "/tmp/a\tb\x00", "cc-peer:v1:16:n:/tmp/a%09b%00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := domain.NewStandInEndpoint(tt.pid, tt.ename, tt.socket)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ep.String())

			back, err := domain.ParseEndpoint(ep.String())
			require.NoError(t, err)
			assert.Equal(t, tt.pid, back.PID())
			assert.Equal(t, tt.ename, back.Name())
			assert.Equal(t, tt.socket, back.Socket())
			assert.Equal(t, tt.want, back.String(), "an accepted endpoint formats back byte for byte")
		})
	}
}

func TestParseEndpointRejects(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // part of the error text
	}{
		{"empty", "", "does not start with"},
		{"version 2", "cc-peer:v2:1:n:/s", "unsupported version"},
		{"version missing", "cc-peer:1:n:/s", "unsupported version"},
		{"foreign scheme", "http://x:1:n:/s", "does not start with"},
		{"scheme case", "CC-PEER:v1:1:n:/s", "does not start with"},
		{"every form named", "codex:v1:xyz", `"codex:v1:xyz" does not start with an endpoint's prefix (cc-peer:v1:…, ssh:v1:<host>:<endpoint> or nats:v1:<node>:<endpoint>)`},
		{"prefix only", "cc-peer:v1:", "got 1 part"},
		{"truncated after pid", "cc-peer:v1:1", "got 1 part"},
		{"truncated after name", "cc-peer:v1:1:n", "got 2 part"},
		{"extra part", "cc-peer:v1:1:n:/s:x", "got 4 part"},
		{"raw colon in name", "cc-peer:v1:1:a:b:/s", "got 4 part"},
		{"empty pid", "cc-peer:v1::n:/s", "not all digits"},
		{"pid with letter", "cc-peer:v1:12a:n:/s", "not all digits"},
		{"pid negative", "cc-peer:v1:-1:n:/s", "not all digits"},
		{"pid plus sign", "cc-peer:v1:+1:n:/s", "not all digits"},
		{"pid with space", "cc-peer:v1: 1:n:/s", "not all digits"},
		{"pid non-ASCII digit", "cc-peer:v1:١:n:/s", "not all digits"},
		{"pid zero", "cc-peer:v1:0:n:/s", "out of range"},
		{"pid leading zero", "cc-peer:v1:0123:n:/s", "leading zeros"},
		{"pid over uint32", "cc-peer:v1:4294967296:n:/s", "out of range"},
		{"pid huge", "cc-peer:v1:99999999999999999999999:n:/s", "out of range"},
		{"empty name", "cc-peer:v1:1::/s", "empty name"},
		{"empty socket", "cc-peer:v1:1:n:", "empty socket"},
		{"lowercase %3a", "cc-peer:v1:1:a%3ab:/s", "escape at byte 1"},
		{"lone percent", "cc-peer:v1:1:50%:/s", "escape at byte 2"},
		{"percent one hex", "cc-peer:v1:1:%2:/s", "escape at byte 0"},
		{"other escape %41", "cc-peer:v1:1:%41:/s", "escape at byte 0"},
		{"escaped slash %2F", "cc-peer:v1:1:n:%2Fs", "socket"},
		{"bad escape in socket", "cc-peer:v1:1:n:/s%", "socket"},
		{"raw newline", "cc-peer:v1:1:a\nb:/s", "byte 1 must be written %XX"},
		{"raw escape character", "cc-peer:v1:1:\x1b[31m:/s", "byte 0 must be written %XX"},
		{"raw bidi override", "cc-peer:v1:1:a\u202e:/s", "byte 1 must be written %XX"},
		{"raw byte not UTF-8", "cc-peer:v1:1:n:/s\xff", "socket: byte 2"},
		{"escaped printable", "cc-peer:v1:1:%C3%BC:/s", "escape at byte 0 is not the canonical form"},
		{"lowercase hex of a control", "cc-peer:v1:1:a%0a:/s", "escape at byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := domain.ParseEndpoint(tt.input)
			require.Error(t, err)
			assert.ErrorIs(t, err, domain.ErrBadEndpoint)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, ep.IsZero())
		})
	}
}

func TestNewEndpointRejects(t *testing.T) {
	tests := []struct {
		name        string
		pid         int
		ename, sock string
	}{
		{"pid 0", 0, "n", "/s"},
		{"pid negative", -5, "n", "/s"},
		{"pid over uint32", 1 << 32, "n", "/s"},
		{"empty name", 1, "", "/s"},
		{"empty socket", 1, "n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := domain.NewStandInEndpoint(tt.pid, tt.ename, tt.sock)
			assert.ErrorIs(t, err, domain.ErrBadEndpoint)
		})
	}
}

func TestZeroEndpointFormatsEmpty(t *testing.T) {
	var ep domain.Endpoint
	assert.True(t, ep.IsZero())
	assert.Equal(t, "", ep.String())
	assert.False(t, strings.HasPrefix(ep.String(), domain.StandInPrefix))
}
