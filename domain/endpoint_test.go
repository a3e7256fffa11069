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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := domain.NewEndpoint(tt.pid, tt.ename, tt.socket)
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
			_, err := domain.NewEndpoint(tt.pid, tt.ename, tt.sock)
			assert.ErrorIs(t, err, domain.ErrBadEndpoint)
		})
	}
}

func TestZeroEndpointFormatsEmpty(t *testing.T) {
	var ep domain.Endpoint
	assert.True(t, ep.IsZero())
	assert.Equal(t, "", ep.String())
	assert.False(t, strings.HasPrefix(ep.String(), domain.EndpointPrefix))
}
