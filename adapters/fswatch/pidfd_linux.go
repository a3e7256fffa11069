package fswatch

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"
)

func pidfdOpen(pid int) (int, error) { return unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK) }

// waitFD blocks in poll(2) until fd (a pidfd) is readable, which the kernel
// makes it when the process exits, or until ctx ends; ctx's end wakes poll
// through a pipe. It returns true when the process exited.
func waitFD(ctx context.Context, fd int) (bool, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return false, err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_, _ = unix.Write(p[1], []byte{1})
	})
	defer func() {
		if !stop() {
			<-fired
		}
		unix.Close(p[0])
		unix.Close(p[1])
	}()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if fds[0].Revents&unix.POLLNVAL != 0 {
			return false, errors.New("poll pidfd: invalid descriptor")
		}
		if fds[0].Revents != 0 {
			return true, nil
		}
		if fds[1].Revents != 0 {
			return false, nil
		}
	}
}
