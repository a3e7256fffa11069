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
	f, ok := w.(*os.File)
	if !ok {
		return ch, func() {}
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(d uintptr) { fd = int(d) })
	}
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return ch, func() {}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return ch, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for ctx.Err() == nil {
			fds[0].Revents = 0
			_, err := unix.Poll(fds, int(readerPoll/time.Millisecond))
			switch {
			case errors.Is(err, unix.EINTR):
			case err != nil, fds[0].Revents&unix.POLLNVAL != 0:
				return
			case fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0:
				close(ch)
				return
			}
		}
	}()
	return ch, func() { cancel(); wg.Wait() }
}
