//go:build unix

package cli

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// readerPoll bounds each poll(2) of readerGone, so its goroutine notices
// the command's end within that long.
const readerPoll = 200 * time.Millisecond

// readerGone returns a channel closed when w is a pipe or socket whose
// reading end has gone away (`peerctl watch | head -1` after head exits),
// noticed without writing: poll(2) on the descriptor with no requested
// events reports POLLERR (a pipe whose read end is closed) or POLLHUP (a
// socket whose peer closed). For anything else (a terminal, a file, a
// buffer) the channel never closes. stop ends the goroutine and waits for
// it; call it once the command ends.
func readerGone(w any) (gone <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	fd := pipeFD(w)
	if fd < 0 {
		return ch, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			gone, ok := hungUp(fd, readerPoll)
			if gone {
				close(ch)
			}
			if gone || !ok {
				return
			}
		}
	}()
	return ch, func() { cancel(); wg.Wait() }
}

// readerGoneNow is readerGone's check made once, at once: for a command
// that must not act (send) on behalf of a reader that is no longer there.
func readerGoneNow(w any) bool {
	fd := pipeFD(w)
	if fd < 0 {
		return false
	}
	gone, _ := hungUp(fd, 0)
	return gone
}

// pipeFD is w's descriptor when w is an *os.File on a pipe or socket, else -1.
func pipeFD(w any) int {
	fd, st, ok := fstat(w)
	if !ok {
		return -1
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return -1
	}
	return fd
}

// fstat is w's descriptor and its stat when w is an *os.File.
func fstat(w any) (int, unix.Stat_t, bool) {
	var st unix.Stat_t
	f, ok := w.(*os.File)
	if !ok {
		return -1, st, false
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(d uintptr) { fd = int(d) })
	}
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return -1, st, false
	}
	return fd, st, true
}

// hungUp polls fd once, waiting at most wait: gone when its reading end
// has gone away; ok false when fd cannot be polled any more.
func hungUp(fd int, wait time.Duration) (gone, ok bool) {
	fds := []unix.PollFd{{Fd: int32(fd)}}
	_, err := unix.Poll(fds, int(wait/time.Millisecond))
	switch {
	case errors.Is(err, unix.EINTR):
		return false, true
	case err != nil, fds[0].Revents&unix.POLLNVAL != 0:
		return false, false
	}
	return fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0, true
}

// isNullDevice reports whether w is the null device (/dev/null): what a
// closed stdout is by the time peerctl runs, since Go's runtime opens
// /dev/null in place of a closed descriptor 0, 1 or 2.
func isNullDevice(w any) bool {
	_, st, ok := fstat(w)
	var null unix.Stat_t
	if !ok || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev
}
