package procliveness

// macOS: kill(2) and sysctl kern.proc.pid via golang.org/x/sys/unix, the
// start time rendered as Claude Code's darwin build takes it from
// `LC_ALL=C TZ=UTC ps -o lstart=` (2.1.328, 2.1.332; claudeos.go).

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Checker checks records against this Mac: kill(pid, 0) (nil or EPERM is
// alive, ESRCH dead), the pid's start from sysctl kern.proc.pid compared as
// text with procStart, and pidDomain against DarwinPIDDomain. Build it with
// New; it is safe for concurrent use.
type Checker struct {
	kill func(pid int) error
	info func(pid int) (DarwinProc, error)
}

var (
	_ ports.Liveness  = (*Checker)(nil)
	_ ports.PIDProber = (*Checker)(nil)
)

// Option adjusts a Checker (for tests).
type Option func(*Checker)

// WithKill replaces kill(pid, 0) (tests).
func WithKill(f func(pid int) error) Option { return func(c *Checker) { c.kill = f } }

// New builds a Checker.
func New(opts ...Option) *Checker {
	c := &Checker{kill: func(pid int) error { return unix.Kill(pid, 0) }, info: sysctlProc}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Domain returns our pid domain, DarwinPIDDomain.
func (c *Checker) Domain() (string, error) { return DarwinPIDDomain, nil }

// Check probes rec's process (see Checker).
func (c *Checker) Check(rec domain.Record) domain.Liveness {
	return checkRecord(rec, DarwinPIDDomain, nil, osProbe{
		alive: func(pid int) (domain.Tri, string) { return killAnswer(pid, c.kill(pid)) },
		start: func(pid int) (string, bool, error) {
			p, err := c.info(pid)
			if err != nil {
				return "", false, err
			}
			return p.Start(), p.Exited(), nil
		},
		same: func(record, actual string) (domain.Tri, string) { return CompareDarwinStart(record, actual), "" },
	})
}

// Gone reports, for each of pids, whether no process has that pid:
// kill(pid, 0) fails with ESRCH.
func (c *Checker) Gone(pids []int) []bool {
	gone := make([]bool, len(pids))
	for i, pid := range pids {
		gone[i] = pid > 0 && errors.Is(c.kill(pid), unix.ESRCH)
	}
	return gone
}

// ProcessGone reports whether no process has pid (kill(pid, 0): ESRCH).
func ProcessGone(pid int) bool { return pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH) }

// killAnswer reads kill(pid, 0)'s answer.
func killAnswer(pid int, err error) (domain.Tri, string) {
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return domain.Yes, ""
	case errors.Is(err, unix.ESRCH):
		return domain.No, ""
	}
	return domain.Unknown, fmt.Sprintf("kill(%d, 0): %v", pid, err)
}

// sysctlProc reads kern.proc.pid.<pid>. A pid with no process gives no
// kinfo_proc at all (golang.org/x/sys/unix answers EIO for the short
// read): that is reported as fs.ErrNotExist.
func sysctlProc(pid int) (DarwinProc, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	switch {
	case errors.Is(err, unix.EIO), errors.Is(err, unix.ESRCH):
		return DarwinProc{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, fs.ErrNotExist)
	case err != nil:
		return DarwinProc{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	return DarwinProc{
		Stat:      kp.Proc.P_stat,
		StartSec:  kp.Proc.P_starttime.Sec,
		StartUsec: int64(kp.Proc.P_starttime.Usec),
		PPID:      int(kp.Eproc.Ppid),
	}, nil
}

// StartTime returns pid's start time as the darwin build writes procStart
// (FormatLstart of kinfo_proc p_starttime). procRoot is ignored: macOS has
// no /proc. Errors wrap fs.ErrNotExist when there is no such process.
func StartTime(_ string, pid int) (string, error) {
	p, err := sysctlProc(pid)
	if err != nil {
		return "", err
	}
	return p.Start(), nil
}

// Tree reads parent pids with sysctl kern.proc.pid. The zero value works.
type Tree struct{}

var _ ports.Processes = (*Tree)(nil)

// NewTree returns a Tree; the argument (a /proc root on Linux) is ignored.
func NewTree(string) *Tree { return &Tree{} }

// Parent returns pid's parent pid (kinfo_proc e_ppid; 0 for launchd's
// parent). Errors wrap fs.ErrNotExist when the process is gone.
func (t *Tree) Parent(pid int) (int, error) {
	p, err := sysctlProc(pid)
	if err != nil {
		return 0, fmt.Errorf("read parent of pid %d: %w", pid, err)
	}
	return p.PPID, nil
}
