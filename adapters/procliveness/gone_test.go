//go:build linux

package procliveness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

func TestGone(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		killErr error
		want    bool
	}{
		{"no such process", 4652, unix.ESRCH, true},
		{"alive", 4652, nil, false},
		{"alive, not ours", 4652, unix.EPERM, false},
		{"odd error", 4652, unix.EINVAL, false},
		{"no pid", 0, unix.ESRCH, false},
		{"negative pid", -1, unix.ESRCH, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			c := New(WithKill(func(int) error { called = true; return tc.killErr }))
			assert.Equal(t, tc.want, c.Gone(tc.pid))
			assert.Equal(t, tc.pid > 0, called, "kill called for pid %d", tc.pid)
		})
	}
}
