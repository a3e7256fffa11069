//go:build !linux

package fswatch

import (
	"context"

	"golang.org/x/sys/unix"
)

// Without pidfds, Exits polls.
func pidfdOpen(int) (int, error) { return -1, unix.ENOSYS }

func (x *Exits) watchPidfd(context.Context, int, chan struct{}, func()) error { return unix.ENOSYS }

type pidfdSetMu struct{}
