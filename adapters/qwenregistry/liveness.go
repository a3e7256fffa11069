package qwenregistry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Liveness checks a Qwen Code record's process as Qwen Code's readers do
// (0.24.4): pidNs must equal the inode of our /proc/self/ns/pid (a record
// without pidNs is never listed on Linux); procStart is
// "<boot_id>:<ticks>", whose boot id must be this boot's
// (/proc/sys/kernel/random/boot_id) and whose ticks must equal field 22 of
// /proc/<pid>/stat. The pid probe and the ticks comparison are the base
// checker's (the one Claude Code records use), so both harnesses share one
// reading of /proc. Build it with NewLiveness.
type Liveness struct {
	base ports.Liveness
	ids  func() ourIDs
}

// ourIDs are this boot's id and our pid namespace's inode, or why either
// could not be read.
type ourIDs struct {
	boot   string
	bootEr error
	ns     string
	nsErr  error
}

var (
	_ ports.Liveness  = (*Liveness)(nil)
	_ ports.PIDProber = (*Liveness)(nil)
)

// NewLiveness builds a checker over base that reads our boot id and pid
// namespace from procRoot ("/proc") once, when it first checks a record:
// building it reads nothing, so a machine with no Qwen Code records pays
// nothing for it (every command builds every harness).
func NewLiveness(base ports.Liveness, procRoot string) *Liveness {
	return &Liveness{base: base, ids: sync.OnceValue(func() ourIDs { return readIDs(procRoot) })}
}

// readIDs reads procRoot's boot id and the inode of its self/ns/pid.
func readIDs(procRoot string) ourIDs {
	var l ourIDs
	b, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "random", "boot_id"))
	if err != nil {
		l.bootEr = fmt.Errorf("read boot id: %w", err)
	} else {
		l.boot = strings.TrimSpace(string(b))
	}
	link, err := os.Readlink(filepath.Join(procRoot, "self", "ns", "pid"))
	if err == nil {
		// "pid:[4026531836]"
		inode, ok := strings.CutPrefix(link, "pid:[")
		inode, ok2 := strings.CutSuffix(inode, "]")
		if ok && ok2 && inode != "" {
			l.ns = inode
		} else {
			err = fmt.Errorf("unexpected pid namespace link %q", link)
		}
	}
	if err != nil {
		l.nsErr = fmt.Errorf("read pid namespace: %w", err)
	}
	return l
}

// Gone asks the base checker which pids are gone (false when it cannot
// tell).
func (l *Liveness) Gone(pids []int) []bool {
	if p, ok := l.base.(ports.PIDProber); ok {
		return p.Gone(pids)
	}
	return make([]bool, len(pids))
}

// Check probes rec's process. What cannot be checked stays domain.Unknown
// and is listed in Unchecked.
func (l *Liveness) Check(rec domain.Record) domain.Liveness {
	var out domain.Liveness
	ids := l.ids()
	switch {
	case ids.nsErr != nil:
		out.Unchecked = append(out.Unchecked, "pidNs not checked: "+ids.nsErr.Error())
	case rec.PIDDomain == "":
		// Qwen Code 0.24.4 on Linux never lists a record without pidNs.
		out.DomainMatches, out.OurDomain = domain.No, ids.ns
	case rec.PIDDomain == ids.ns:
		out.DomainMatches, out.OurDomain = domain.Yes, ids.ns
	default:
		out.DomainMatches, out.OurDomain = domain.No, ids.ns
		return out // its pid means nothing here
	}
	if out.DomainMatches == domain.No {
		return out
	}
	// procStart: "<boot_id>:<ticks>"; null (absent) off Linux.
	probe := rec
	probe.PIDDomain, probe.ProcStart, probe.ProcStartFt, probe.ProcStartFtEmpty, probe.ProcStartNumber = "", "", "", false, false
	bootMismatch := false
	switch boot, ticks, ok := strings.Cut(rec.ProcStart, ":"); {
	case rec.ProcStart == "" && !rec.ProcStartEmpty:
		out.Unchecked = append(out.Unchecked, "record has no procStart; start time not checked")
	case !ok || boot == "" || ticks == "":
		out.Unchecked = append(out.Unchecked, fmt.Sprintf("procStart %q is not <boot_id>:<ticks>; start time not checked", rec.ProcStart))
	case ids.bootEr != nil:
		out.Unchecked = append(out.Unchecked, "boot id not checked: "+ids.bootEr.Error())
		probe.ProcStart = ticks
	case boot != ids.boot:
		bootMismatch = true
	default:
		probe.ProcStart = ticks
	}
	b := l.base.Check(probe)
	out.Alive, out.Zombie, out.ActualStart = b.Alive, b.Zombie, b.ActualStart
	out.StartMatches = b.StartMatches
	for _, u := range b.Unchecked {
		if !strings.Contains(u, "pidDomain") && !strings.Contains(u, "procStart") {
			out.Unchecked = append(out.Unchecked, u)
		}
	}
	if bootMismatch {
		// A record of an earlier boot: whatever runs at that pid now is
		// another process.
		out.StartMatches = domain.No
		out.ActualStart = "this boot " + ids.boot
	} else if out.ActualStart != "" && ids.boot != "" {
		out.ActualStart = ids.boot + ":" + out.ActualStart
	}
	return out
}
