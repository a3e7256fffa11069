package courierexec

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// The process-group mechanics of a courier, kept small and apart.

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// setGroup makes cmd start in a process group of its own (its pid is the
// group's id).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to process group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// signalGroup signals the courier's process group and, should the group be
// gone or never have formed, the courier itself: a wait on it must end.
func signalGroup(p *os.Process, pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
	_ = p.Signal(sig)
}

// waitExitedNoReap blocks until process pid has exited, without reaping it
// (waitid with WNOWAIT): until exec.Cmd.Wait reaps it, the pid stays taken.
func waitExitedNoReap(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
