//go:build linux

// Package procliveness decides whether a registry record's process is the
// live session it claims to be, using Linux /proc and kill(2) via
// golang.org/x/sys/unix:
//
//   - kill(pid, 0): nil or EPERM means alive, ESRCH dead;
//   - state 'Z' or 'X' in /proc/<pid>/stat (field 3) means exited, not yet
//     reaped: not running (stricter than Claude Code's own listing);
//   - procStart (when the record has it and /proc/<pid>/stat is readable)
//     must equal field 22 of /proc/<pid>/stat, the process start time in
//     clock ticks since boot;
//   - pidDomain (when present) must equal ours,
//     "linux:<machine-id>:pid:[<pid-namespace inode>]", built from
//     /etc/machine-id and /proc/self/ns/pid, the format Claude Code 2.1.328
//     writes.
//
// What cannot be checked stays domain.Unknown and is listed in
// Liveness.Unchecked; it never becomes a mismatch.
package procliveness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Checker checks records against this machine. Build it with New; it is
// safe for concurrent use.
type Checker struct {
	procRoot  string
	kill      func(pid int) error
	domain    string
	domainErr error
}

var (
	_ ports.Liveness  = (*Checker)(nil)
	_ ports.PIDProber = (*Checker)(nil)
)

// Option adjusts a Checker (for tests).
type Option func(*checkerConfig)

type checkerConfig struct {
	procRoot      string
	machineIDPath string
	kill          func(pid int) error
}

// WithProcRoot reads /proc from another root (tests).
func WithProcRoot(dir string) Option { return func(c *checkerConfig) { c.procRoot = dir } }

// WithMachineIDPath reads the machine id from another file (tests).
func WithMachineIDPath(p string) Option { return func(c *checkerConfig) { c.machineIDPath = p } }

// WithKill replaces kill(pid, 0) (tests).
func WithKill(f func(pid int) error) Option { return func(c *checkerConfig) { c.kill = f } }

// New builds a Checker and computes our pid domain once (from this
// machine's files, once per process: every harness builds a Checker, and
// neither the machine id nor a process's pid namespace changes while it
// runs).
func New(opts ...Option) *Checker {
	cfg := checkerConfig{procRoot: "/proc", machineIDPath: "/etc/machine-id",
		kill: func(pid int) error { return unix.Kill(pid, 0) }}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Checker{procRoot: cfg.procRoot, kill: cfg.kill}
	if cfg.procRoot == "/proc" && cfg.machineIDPath == "/etc/machine-id" {
		c.domain, c.domainErr = ourDomain()
	} else {
		c.domain, c.domainErr = OurDomain(cfg.procRoot, cfg.machineIDPath)
	}
	return c
}

// ourDomain is this process's pid domain, read once.
var ourDomain = sync.OnceValues(func() (string, error) { return OurDomain("/proc", "/etc/machine-id") })

// Domain returns our pid domain, or the error that prevented computing it.
func (c *Checker) Domain() (string, error) { return c.domain, c.domainErr }

// OurDomain builds "linux:<machine-id>:pid:[<inode>]" from the machine-id
// file and the link <procRoot>/self/ns/pid (whose target reads "pid:[<inode>]").
func OurDomain(procRoot, machineIDPath string) (string, error) {
	mid, err := readSmall(machineIDPath, 4096)
	if err != nil {
		return "", fmt.Errorf("read machine id: %w", err)
	}
	id := strings.TrimSpace(string(mid))
	if id == "" {
		return "", fmt.Errorf("machine id file %s is empty", machineIDPath)
	}
	ns, err := os.Readlink(filepath.Join(procRoot, "self", "ns", "pid"))
	if err != nil {
		return "", fmt.Errorf("read pid namespace: %w", err)
	}
	return "linux:" + id + ":" + ns, nil
}

// Check probes rec's process. A record of another pid domain is reported
// DomainMatches No and probed all the same (its pid, here), since Claude
// Code's own listing ignores pidDomain (see domain.Entry.HarnessMayList).
func (c *Checker) Check(rec domain.Record) domain.Liveness {
	l := domain.Liveness{OurDomain: c.domain}
	if rec.PIDDomain != "" {
		if c.domainErr != nil {
			l.Unchecked = append(l.Unchecked, "pidDomain not checked: "+c.domainErr.Error())
		} else if rec.PIDDomain == c.domain {
			l.DomainMatches = domain.Yes
		} else {
			// The pid means nothing in our namespace, but Claude Code's
			// own listing ignores pidDomain: probe it anyway, so the
			// identity rule knows whether that listing shows the record
			// (domain.Entry.HarnessMayList).
			l.DomainMatches = domain.No
		}
	} else {
		l.Unchecked = append(l.Unchecked, "record has no pidDomain; pid namespace not checked")
	}
	if rec.PID <= 0 {
		l.Unchecked = append(l.Unchecked, "no pid")
		return l
	}
	switch err := c.kill(rec.PID); {
	case err == nil, errors.Is(err, unix.EPERM):
		l.Alive = domain.Yes
	case errors.Is(err, unix.ESRCH):
		l.Alive = domain.No
		return l
	default:
		l.Unchecked = append(l.Unchecked, fmt.Sprintf("kill(%d, 0): %v", rec.PID, err))
		return l
	}
	// One read of /proc/<pid>/stat gives both the state (a zombie still
	// answers kill(pid, 0)) and the start time.
	st, err := ReadStat(c.procRoot, rec.PID)
	start, field, set := rec.CheckedStart()
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Either the pid exited between kill and read, or /proc hides it
		// (mounted hidepid=2, or a /proc of another pid namespace). Ask
		// kill again: only ESRCH makes it dead; otherwise it stays unknown.
		if kerr := c.kill(rec.PID); errors.Is(kerr, unix.ESRCH) {
			l.Alive = domain.No
			return l
		}
		if set {
			l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s not checked: %s/%d is not visible while the pid is alive", field, c.procRoot, rec.PID))
		}
	case err != nil:
		if set {
			l.Unchecked = append(l.Unchecked, field+" not checked: "+err.Error())
		}
	default:
		switch {
		case !set:
		case st.Start == start:
			l.StartMatches, l.ActualStart = domain.Yes, st.Start
		default:
			l.StartMatches, l.ActualStart = domain.No, st.Start
		}
		if st.Exited() {
			// Stricter than Claude Code 2.1.328's own listing (claude
			// agents lists a zombie as live): the process has exited, only
			// its parent has not reaped it yet. The start time above still
			// says whether the record is that process's (for
			// domain.Entry.HarnessMayList).
			l.Alive, l.Zombie = domain.No, true
			return l
		}
	}
	if !set {
		l.Unchecked = append(l.Unchecked, "record has no procStart; pid reuse not checked")
	}
	return l
}

// Stat is what peerctl reads from /proc/<pid>/stat.
type Stat struct {
	// State is field 3: 'R' running, 'S' sleeping, 'Z' zombie, 'X' dead, …
	// (proc(5)).
	State byte
	// Start is field 22 (starttime, clock ticks since boot) as text.
	Start string
}

// Exited reports whether the process has exited and only waits to be
// reaped by its parent: state 'Z' (zombie) or 'X' (dead).
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' }

// ReadStat reads and parses <procRoot>/<pid>/stat (one read).
func ReadStat(procRoot string, pid int) (Stat, error) {
	data, err := readSmall(filepath.Join(procRoot, strconv.Itoa(pid), "stat"), 64<<10)
	if err != nil {
		return Stat{}, err
	}
	return ParseStatFields(data)
}

// StartTime returns field 22 (starttime, clock ticks since boot) of
// <procRoot>/<pid>/stat as text. As runc does, the command name is taken to
// run to the last ')', so names containing ") " cannot shift the fields.
func StartTime(procRoot string, pid int) (string, error) {
	st, err := ReadStat(procRoot, pid)
	return st.Start, err
}

// ParseStat extracts field 22 from the contents of a /proc/<pid>/stat file.
func ParseStat(data []byte) (string, error) {
	st, err := ParseStatFields(data)
	return st.Start, err
}

// ParseStatFields extracts fields 3 (state) and 22 (starttime) from the
// contents of a /proc/<pid>/stat file. The command name is taken to run to
// the last ')'.
func ParseStatFields(data []byte) (Stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, errors.New("stat has no ')'")
	}
	// After ") " come fields 3 (state) onwards.
	fields := strings.Fields(string(data[i+1:]))
	const idx = 22 - 3
	if len(fields) <= idx {
		return Stat{}, fmt.Errorf("stat has %d fields after the command name, want > %d", len(fields), idx)
	}
	if len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("stat field 3 %q is not a state letter", fields[0])
	}
	v := fields[idx]
	if _, err := strconv.ParseUint(v, 10, 64); err != nil {
		return Stat{}, fmt.Errorf("stat field 22 %q is not a number", v)
	}
	return Stat{State: fields[0][0], Start: v}, nil
}
