package procliveness

import "time"

// DarwinProc is what peerctl reads from a macOS kinfo_proc (sysctl
// kern.proc.pid.<pid>): p_stat, p_starttime and e_ppid. A plain value, so
// its rules are tested on any OS.
type DarwinProc struct {
	Stat      int8  // p_stat: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5 (XNU bsd/sys/proc.h)
	StartSec  int64 // p_starttime.tv_sec, seconds since the Unix epoch
	StartUsec int64 // p_starttime.tv_usec
	PPID      int   // e_ppid
}

// darwinSZOMB is p_stat of a process that has exited and waits to be reaped.
const darwinSZOMB = 5

// Exited reports whether the process has exited and waits to be reaped.
func (p DarwinProc) Exited() bool { return p.Stat == darwinSZOMB }

// Start renders the start time as the darwin build writes procStart: ps
// prints p_starttime.tv_sec with strftime, so microseconds are dropped.
func (p DarwinProc) Start() string { return FormatLstart(time.Unix(p.StartSec, 0)) }
