package procgroup

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// AwaitExit blocks until the head has exited, without reaping it: a kqueue
// EVFILT_PROC filter with NOTE_EXIT fires when the process exits and leaves
// the zombie to exec.Cmd.Wait, so the pid stays taken until then. A head
// that has already exited (a zombie the filter cannot attach to: ESRCH)
// returns at once. Should kqueue itself fail, it polls the head's state
// with sysctl kern.proc.pid every pollEvery until it is a zombie (SZOMB).
func (g *Group) AwaitExit() {
	kq, err := unix.Kqueue()
	if err != nil {
		g.awaitPoll()
		return
	}
	defer unix.Close(kq)
	ev := []unix.Kevent_t{{}}
	unix.SetKevent(&ev[0], g.Pid(), unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev[0].Fflags = unix.NOTE_EXIT
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, ev, out, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			ev = nil // registered already (or not at all: then ESRCH came first)
			continue
		case errors.Is(err, unix.ESRCH):
			return // exited already; still unreaped, as only Wait reaps it
		case err != nil:
			g.awaitPoll()
			return
		case n > 0 && out[0].Flags&unix.EV_ERROR != 0:
			if unix.Errno(out[0].Data) == unix.ESRCH {
				return
			}
			g.awaitPoll()
			return
		case n > 0:
			return
		}
	}
}

// pollEvery is the fallback poll interval of AwaitExit.
const pollEvery = 20 * time.Millisecond

// szomb is p_stat of a process that has exited and waits to be reaped
// (XNU bsd/sys/proc.h: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5).
const szomb = 5

func (g *Group) awaitPoll() {
	for {
		kp, err := unix.SysctlKinfoProc("kern.proc.pid", g.Pid())
		if err != nil || kp.Proc.P_stat == szomb {
			return
		}
		time.Sleep(pollEvery)
	}
}
