package procliveness

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/peerctl/peerctl/domain"
)

// osProbe is what one OS (darwin, windows) tells about a pid; checkRecord
// turns it into a domain.Liveness the same way on each. Linux keeps its
// own Check (procliveness.go), which also reads the pid namespace.
type osProbe struct {
	// alive: Yes, No, or Unknown with the reason.
	alive func(pid int) (domain.Tri, string)
	// start: the pid's start time as the OS's Claude Code build writes it,
	// and whether the process has exited but is not yet reaped. An error
	// wrapping fs.ErrNotExist means the process is gone.
	start func(pid int) (start string, exited bool, err error)
	// same compares a record's start with the pid's: Yes, No, or Unknown
	// with the reason.
	same func(record, actual string) (domain.Tri, string)
}

// checkRecord probes rec's process with p. A record of another pid domain
// is reported DomainMatches No and probed all the same, as on Linux.
func checkRecord(rec domain.Record, ourDomain string, domainErr error, p osProbe) domain.Liveness {
	l := domain.Liveness{OurDomain: ourDomain}
	switch {
	case rec.PIDDomain == "":
		l.Unchecked = append(l.Unchecked, "record has no pidDomain; pid domain not checked")
	case domainErr != nil:
		l.Unchecked = append(l.Unchecked, "pidDomain not checked: "+domainErr.Error())
	case rec.PIDDomain == ourDomain:
		l.DomainMatches = domain.Yes
	default:
		l.DomainMatches = domain.No
	}
	if rec.PID <= 0 {
		l.Unchecked = append(l.Unchecked, "no pid")
		return l
	}
	alive, why := p.alive(rec.PID)
	l.Alive = alive
	switch alive {
	case domain.No:
		return l
	case domain.Unknown:
		l.Unchecked = append(l.Unchecked, why)
		return l
	}
	want, field, set := rec.CheckedStart()
	actual, exited, err := p.start(rec.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.Alive = domain.No
		return l
	case err != nil:
		if set {
			l.Unchecked = append(l.Unchecked, fmt.Sprintf("%s not checked: %v", field, err))
		}
	case set:
		same, why := p.same(want, actual)
		l.StartMatches, l.ActualStart = same, actual
		if same == domain.Unknown {
			l.Unchecked = append(l.Unchecked, why)
		}
	}
	if err == nil && exited {
		// Exited, not yet reaped by its parent: not running (as on Linux).
		l.Alive, l.Zombie = domain.No, true
		return l
	}
	if !set {
		l.Unchecked = append(l.Unchecked, "record has no procStart; pid reuse not checked")
	}
	return l
}
