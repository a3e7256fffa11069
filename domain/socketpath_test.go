package domain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaxSocketPathFor(t *testing.T) {
	for goos, want := range map[string]int{"linux": 107, "darwin": 103, "freebsd": 103, "windows": 0, "plan9": 0} {
		assert.Equal(t, want, MaxSocketPathFor(goos), goos)
	}
}

func TestSocketPathTooLongOn(t *testing.T) {
	for _, tc := range []struct {
		goos string
		n    int
		long bool
	}{
		{"linux", 107, false}, {"linux", 108, true},
		{"darwin", 103, false}, {"darwin", 104, true}, {"darwin", 107, true},
		{"windows", 4000, false}, // a named pipe there: no Unix socket limit
	} {
		why := SocketPathTooLongOn(tc.goos, "/"+strings.Repeat("s", tc.n-1))
		assert.Equal(t, tc.long, why != "", "%s %d bytes: %q", tc.goos, tc.n, why)
		if tc.long {
			assert.Contains(t, why, "longer than a Unix socket address holds")
		}
	}
}
