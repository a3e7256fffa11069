package qwenregistry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	base   ports.Liveness
	boot   string
	bootEr error
	ns     string
	nsErr  error
}

var (
	_ ports.Liveness  = (*Liveness)(nil)
	_ ports.PIDProber = (*Liveness)(nil)
)

// NewLiveness builds a checker over base, reading our boot id and pid
// namespace from procRoot ("/proc") once.
func NewLiveness(base ports.Liveness, procRoot string) *Liveness {
	l := &Liveness{base: base}
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
	switch {
	case l.nsErr != nil:
		out.Unchecked = append(out.Unchecked, "pidNs not checked: "+l.nsErr.Error())
	case rec.PIDDomain == "":
		// Qwen Code 0.24.4 on Linux never lists a record without pidNs.
		out.DomainMatches, out.OurDomain = domain.No, l.ns
	case rec.PIDDomain == l.ns:
		out.DomainMatches, out.OurDomain = domain.Yes, l.ns
	default:
		out.DomainMatches, out.OurDomain = domain.No, l.ns
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
	case l.bootEr != nil:
		out.Unchecked = append(out.Unchecked, "boot id not checked: "+l.bootEr.Error())
		probe.ProcStart = ticks
	case boot != l.boot:
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
		out.ActualStart = "this boot " + l.boot
	} else if out.ActualStart != "" && l.boot != "" {
		out.ActualStart = l.boot + ":" + out.ActualStart
	}
	return out
}
