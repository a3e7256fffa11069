//go:build !linux

package fswatch

import (
	"context"

	"golang.org/x/sys/unix"
)

// Without pidfds, Exits polls.
func pidfdOpen(int) (int, error) { return -1, unix.ENOSYS }

func waitFD(context.Context, int) (bool, error) { return false, unix.ENOSYS }
