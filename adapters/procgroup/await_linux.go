package procgroup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// AwaitExit blocks until the head has exited, without reaping it
// (waitid with WNOWAIT): until exec.Cmd.Wait reaps it, the pid stays taken.
func (g *Group) AwaitExit() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, g.Pid(), &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
