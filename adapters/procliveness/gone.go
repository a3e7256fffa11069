//go:build linux

package procliveness

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/ports"
)

// ListedBatch is the fewest pids Gone answers from one listing of the
// processes rather than one kill(pid, 0) each. A kill costs about 1.4 us of
// CPU; the listing (with its checks that it names every process) about 80
// us and 1 us more per process listed (BenchmarkGone, 150 and 450
// processes). So Gone lists only a batch of at least ListedBatch pids and
// at least as many as there are processes.
const ListedBatch = 64

// Gone reports, for each of pids, whether no process has that pid: gone[i]
// answers pids[i]. A pid is gone when kill(pid, 0) fails with ESRCH; any
// other answer (alive, EPERM, an odd error) is not "gone", and neither is a
// pid <= 0.
//
// A large batch (see ListedBatch) is answered from one listing of the
// process root, made during this call, when that listing names every
// process of ours (listsEveryProcess): a pid it does not list is gone (a
// pid that is only some process's thread id counts as gone too: no record
// names a thread). Otherwise, or when the root cannot be listed whole, each
// pid is asked with kill(pid, 0). A zombie is listed, so it is not gone
// (Check tells it apart).
func (c *Checker) Gone(pids []int) []bool {
	gone := make([]bool, len(pids))
	t := c.listing(len(pids))
	for i, pid := range pids {
		if pid <= 0 {
			continue
		}
		if t != nil {
			if listed, known := t.Has(pid); known {
				gone[i] = !listed
				continue
			}
		}
		gone[i] = errors.Is(c.kill(pid), unix.ESRCH)
	}
	return gone
}

var _ ports.PIDLister = (*Checker)(nil)

// Processes is about how many processes the machine runs: the process
// root's link count (every pid namespace's processes, plus a few; Linux's
// proc_root_getattr), 0 when it cannot be read.
func (c *Checker) Processes() int {
	var st unix.Stat_t
	if err := unix.Stat(c.procRoot, &st); err != nil {
		return 0
	}
	return int(st.Nlink)
}

// Listed returns the pid of every process from one listing of the process
// root, made during this call, in no set order. ok is false when that
// listing would not name every process kill(pid, 0) finds
// (listsEveryProcess) or could not be made whole (more than
// MaxTableProcs processes, a listing that failed).
func (c *Checker) Listed() (pids []int, ok bool) {
	if !listsEveryProcess(c.procRoot) {
		return nil, false
	}
	pids, whole, err := listPIDs(c.procRoot)
	if err != nil || !whole {
		return nil, false
	}
	return pids, true
}

// listing is a fresh Table of the process root when listing it is cheaper
// than n kills and it names every process kill finds; else nil.
func (c *Checker) listing(n int) *Table {
	if n < ListedBatch {
		return nil
	}
	// The root's link count is the number of processes of the machine,
	// every pid namespace's (Linux's proc_root_getattr), plus a few.
	var st unix.Stat_t
	if err := unix.Stat(c.procRoot, &st); err != nil || int(st.Nlink) > n {
		return nil
	}
	if !listsEveryProcess(c.procRoot) {
		return nil
	}
	return NewTable(c.procRoot)
}

// listsEveryProcess reports whether a listing of procRoot names every
// process kill(pid, 0) finds: procRoot/self names our own pid (a /proc
// mounted for another pid namespace names another pid, or none; a
// container that did not remount /proc shows the host's), and the mount
// at procRoot (procRoot/self/mountinfo, proc(5)) is a proc file system
// that hides no process (no hidepid=invisible or =ptraceable, which leave
// other users' processes out of the listing while kill still finds them).
// Any doubt is false.
func listsEveryProcess(procRoot string) bool {
	self, err := os.Readlink(filepath.Join(procRoot, "self"))
	if err != nil || self != strconv.Itoa(os.Getpid()) {
		return false
	}
	info, err := readSmall(filepath.Join(procRoot, "self", "mountinfo"), 4<<20)
	if err != nil {
		return false
	}
	var fstype, opts string
	for line := range strings.Lines(string(info)) {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
		// the mount point is field 5; after the "-" come the type, the
		// source and the super block's options. A later mount at the
		// same point hides an earlier one.
		fields := strings.Fields(line)
		if len(fields) < 5 || fields[4] != procRoot {
			continue
		}
		fstype, opts = "", ""
		for i, fld := range fields {
			if fld == "-" && i+3 < len(fields) {
				fstype, opts = fields[i+1], fields[i+3]
				break
			}
		}
	}
	if fstype != "proc" {
		return false
	}
	for o := range strings.SplitSeq(opts, ",") {
		if v, ok := strings.CutPrefix(o, "hidepid="); ok && v != "0" && v != "off" && v != "1" && v != "noaccess" {
			return false
		}
	}
	return true
}
