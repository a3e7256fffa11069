package procliveness

// Windows: OpenProcess, GetExitCodeProcess and GetProcessTimes via
// golang.org/x/sys/windows; the start time is the creation FILETIME as
// decimal digits, which Claude Code's win32 build writes in procStart
// (2.1.328, 2.1.332; claudeos.go).

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Checker checks records against this Windows machine: the pid is alive
// as libuv's kill(pid, 0) decides (Win32Alive), procStart is compared with
// its creation FILETIME as the win32 build compares (CompareWin32Start),
// pidDomain with Win32PIDDomain of our host name. Build it with New; it is
// safe for concurrent use.
type Checker struct {
	domain    string
	domainErr error
}

var (
	_ ports.Liveness  = (*Checker)(nil)
	_ ports.PIDProber = (*Checker)(nil)
)

// Option adjusts a Checker.
type Option func(*Checker)

// New builds a Checker and computes our pid domain once.
func New(opts ...Option) *Checker {
	c := &Checker{}
	if h, err := os.Hostname(); err != nil {
		c.domainErr = fmt.Errorf("host name: %w", err)
	} else {
		c.domain = Win32PIDDomain(h)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Domain returns our pid domain, or the error that prevented computing it.
func (c *Checker) Domain() (string, error) { return c.domain, c.domainErr }

// Check probes rec's process (see Checker).
func (c *Checker) Check(rec domain.Record) domain.Liveness {
	return checkRecord(rec, c.domain, c.domainErr, osProbe{
		alive: func(pid int) (domain.Tri, string) {
			code, err := exitCode(pid)
			return Win32Alive(pid, errno(err), code)
		},
		start: func(pid int) (string, bool, error) {
			s, err := StartTime("", pid)
			return s, false, err
		},
		same: CompareWin32Start,
	})
}

// Gone reports, for each of pids, whether no process runs as that pid.
func (c *Checker) Gone(pids []int) []bool {
	gone := make([]bool, len(pids))
	for i, pid := range pids {
		gone[i] = ProcessGone(pid)
	}
	return gone
}

// ProcessGone reports whether no process runs as pid (Win32Alive says No).
func ProcessGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	code, err := exitCode(pid)
	alive, _ := Win32Alive(pid, errno(err), code)
	return alive == domain.No
}

func errno(err error) uint32 {
	var e windows.Errno
	if errors.As(err, &e) {
		return uint32(e)
	}
	if err != nil {
		return ^uint32(0)
	}
	return 0
}

func open(pid int) (windows.Handle, error) {
	if pid <= 0 || uint64(pid) > math.MaxUint32 {
		return 0, windows.ERROR_INVALID_PARAMETER
	}
	return windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
}

func exitCode(pid int) (uint32, error) {
	h, err := open(pid)
	if err != nil {
		return 0, err
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return 0, err
	}
	return code, nil
}

// StartTime returns pid's creation time (GetProcessTimes) as the win32
// build writes procStart: the FILETIME as decimal digits. procRoot is
// ignored. Errors wrap fs.ErrNotExist when there is no such process.
func StartTime(_ string, pid int) (string, error) {
	h, err := open(pid)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return "", fmt.Errorf("open process %d: %w", pid, fs.ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return "", fmt.Errorf("process times of %d: %w", pid, err)
	}
	return FormatFiletime(FiletimeFromParts(created.HighDateTime, created.LowDateTime)), nil
}

// Tree reads parent pids from a Toolhelp process snapshot. The zero value
// works. Windows keeps a parent's pid after the parent exits, and may give
// it to a new process: a walk can pass through a stranger, which the
// record check (pid and start time) then does not match.
type Tree struct{}

var _ ports.Processes = (*Tree)(nil)

// NewTree returns a Tree; the argument (a /proc root on Linux) is ignored.
func NewTree(string) *Tree { return &Tree{} }

// Parent returns pid's parent pid (th32ParentProcessID). Errors wrap
// fs.ErrNotExist when the process is not in the snapshot.
func (t *Tree) Parent(pid int) (int, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return 0, fmt.Errorf("read parent of pid %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if int(e.ProcessID) == pid {
			return int(e.ParentProcessID), nil
		}
	}
	if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		err = fs.ErrNotExist
	}
	return 0, fmt.Errorf("read parent of pid %d: %w", pid, err)
}
