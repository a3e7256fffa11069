//go:build unix

package fswatch

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errNoSuchProcess is what pidfdOpen fails with for a pid that is gone.
var errNoSuchProcess error = unix.ESRCH

// processGone reports whether kill(pid, 0) says no such process (ESRCH).
func processGone(pid int) bool { return errors.Is(unix.Kill(pid, 0), unix.ESRCH) }

// processUnanswered reports whether kill(pid, 0) fails at all.
func processUnanswered(pid int) bool { return unix.Kill(pid, 0) != nil }
