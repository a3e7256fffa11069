//go:build !linux

package fswatch

import (
	"context"
	"errors"
)

// Without pidfds, Exits polls.
func pidfdOpen(int) (int, error) { return -1, errors.ErrUnsupported }

func closePidfd(int) {}

func (x *Exits) watchPidfd(context.Context, int, chan struct{}, func()) error {
	return errors.ErrUnsupported
}

type pidfdSetMu struct{}
