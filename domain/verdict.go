package domain

import (
	"fmt"
	"strings"
)

// Verdict is what peerctl concludes about one registry record. The set is
// closed; String gives the stable word used in `list --all` and JSON.
type Verdict int

// The verdicts, in the order they are decided.
const (
	VerdictUnknown Verdict = iota
	// VerdictLive: pid alive, start time and pid namespace not contradicted.
	VerdictLive
	// VerdictStale: the pid is gone (a crash left the record behind).
	VerdictStale
	// VerdictReused: the pid is alive but started at another time: pid reuse.
	VerdictReused
	// VerdictForeign: the record's pidDomain is another machine or pid namespace.
	VerdictForeign
	// VerdictMisnamed: the file is not named <pid>.json for the record's pid.
	VerdictMisnamed
	// VerdictHeadless: kind is not "interactive" (claude -p "print",
	// "bg", "daemon", or no kind at all; or a parked session): never a peer.
	VerdictHeadless
	// VerdictMalformed: not JSON, trailing garbage, over the size cap, or required fields missing.
	VerdictMalformed
	// VerdictUnreadable: permission denied, a symlink (never followed) or not a regular file.
	VerdictUnreadable
	// VerdictUnsupported: a record format newer than peerctl reads (a Qwen
	// Code schemaVersion above 1): skipped, never deleted.
	VerdictUnsupported
	// VerdictAmbiguous: a Codex thread the app-server daemon holds
	// loaded while fewer clients run in its folder than it holds threads
	// there: one of them may have it open, or it may be a thread whose
	// client quit (the daemon keeps it loaded about a minute), and peerctl
	// cannot tell which (docs/CODEX.md). Never called live.
	VerdictAmbiguous
	// VerdictRemoved: the record is gone, so nothing is left to judge
	// (`watch`'s gone event only; never a verdict of a record read, and
	// not in Verdicts).
	VerdictRemoved
)

var verdictWords = []string{"unknown", "live", "stale", "reused", "foreign", "misnamed", "headless", "malformed", "unreadable", "unsupported", "ambiguous", "removed"}

// String returns the stable word, e.g. "stale".
func (v Verdict) String() string {
	if int(v) >= 0 && int(v) < len(verdictWords) {
		return verdictWords[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Verdicts lists every decided verdict in a stable order.
func Verdicts() []Verdict {
	return []Verdict{VerdictLive, VerdictStale, VerdictReused, VerdictForeign,
		VerdictMisnamed, VerdictHeadless, VerdictMalformed, VerdictUnreadable, VerdictUnsupported, VerdictAmbiguous}
}

// Tri is a three-valued check result: what could not be checked stays Unknown
// and is never turned into a mismatch.
type Tri int

// Tri values.
const (
	Unknown Tri = iota
	Yes
	No
)

// String returns "yes", "no" or "unknown".
func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case No:
		return "no"
	default:
		return "unknown"
	}
}

// Liveness is the outcome of checking one record's process against the OS.
type Liveness struct {
	// Alive: kill(pid, 0) succeeded or failed with EPERM (Yes), ESRCH (No);
	// No also when the process is a zombie (see Zombie).
	Alive Tri
	// Zombie: the process has exited but its parent has not reaped it
	// (/proc/<pid>/stat state 'Z' or 'X'); kill(pid, 0) still succeeds.
	Zombie bool
	// StartMatches: procStart equals field 22 of /proc/<pid>/stat.
	StartMatches Tri
	// DomainMatches: pidDomain equals ours.
	DomainMatches Tri
	// ActualStart is the pid's current start time when read ("" otherwise).
	ActualStart string
	// OurDomain is this process's pid domain when known.
	OurDomain string
	// Unchecked lists what could not be checked, and why.
	Unchecked []string
}

// Entry is a record with its verdict: one row of `peerctl list --all`.
type Entry struct {
	Record  Record
	Verdict Verdict
	// Reason explains the verdict in words (empty for a plain live record).
	Reason string
	// Unchecked repeats what the liveness check could not verify.
	Unchecked []string
	// Addressable is true for a live record that can receive messages;
	// otherwise Unaddressable says why not.
	Addressable   bool
	Unaddressable string
	// HarnessMayList, for a record we do not call live, says whether the
	// harness's own listing shows it all the same, so that a session there
	// could be reached through its socket (HarnessSpec.Classify sets it;
	// the shared rule never does). The identity rule counts such a
	// record's name and socket; a pid that could not be probed counts.
	// Claude Code's (read from 2.1.328's listing code and measured with
	// claude agents --json): it ignores pidDomain, lists a zombie, compares
	// only a procStart written as a string, and takes the pid from the file
	// name; it drops a record whose pid is not running here or whose
	// procStart names another process.
	HarnessMayList bool
	// SocketFile is what the socket path is on disk: an opaque identity of
	// the file it resolves to (device and inode on Unix), "" when not
	// looked at or not there. Two entries with the same SocketFile publish
	// one socket whatever their paths' text (a hard link, a linked
	// folder), and the identity rule treats them as one socket.
	SocketFile string
}

// Live reports whether the entry is a live session.
func (e Entry) Live() bool { return e.Verdict == VerdictLive }

// Endpoint returns the session's endpoint, or the zero Endpoint when the
// entry is not addressable.
func (e Entry) Endpoint() Endpoint {
	if !e.Addressable {
		return Endpoint{}
	}
	ep, err := endpointFor(e.Record)
	if err != nil {
		return Endpoint{}
	}
	return ep
}

// Classify decides a record's verdict from what was read and the liveness
// check, by the rule of the record's harness (HarnessSpec.Classify). A
// check that could not be made never causes a negative verdict.
func Classify(r Record, l Liveness) Entry { return r.Harness.spec().classify(r, l) }

// classifyClaude is Classify for a Claude Code record, in this order: file
// problems (unreadable, malformed, misnamed), headless kinds (anything but
// exactly "interactive"), foreign pid domain, dead pid (stale), start-time
// mismatch (reused), else live.
func classifyClaude(r Record, l Liveness) Entry {
	e := Entry{Record: r, Unchecked: l.Unchecked}
	// runs: Claude Code's listing would take the pid for the record's
	// process (it answers kill(pid, 0), zombies too, and no procStart
	// contradicts it).
	runs := (l.Alive != No || l.Zombie) && l.StartMatches != No
	switch {
	case r.Problem != "":
		e.Verdict = r.ProblemVerdict
		if e.Verdict == VerdictUnknown {
			e.Verdict = VerdictMalformed
		}
		e.Reason = r.Problem
		// Claude Code takes the pid from a file named <pid>.json (digits,
		// no leading zero) whatever the record's pid field says (or holds),
		// ignores a procStart that is not a string, and lists it when that
		// pid runs; we do not probe that pid, so such a file counts when
		// its JSON was read (a name or socket to count it by).
		e.HarnessMayList = (e.Verdict == VerdictMisnamed || e.Verdict == VerdictMalformed) && canonicalRecordFile(r.File) && !r.Parked()
	case r.Kind != KindInteractive:
		e.Verdict = VerdictHeadless
		e.Reason = fmt.Sprintf("kind %q is not an interactive session", r.Kind)
		if r.Kind == "" {
			// Claude Code 2.1.328's own listing (claude agents) skips such
			// a record too (measured); every version we know writes "kind".
			e.Reason = `record has no kind; only kind "interactive" is a peer`
		}
		// SendMessage's candidates (2.1.328) are records with a socket of
		// any kind: a background session ("bg") is one.
		e.HarnessMayList = !r.Parked() && runs
	case r.Parked():
		// Claude Code 2.1.328's listings leave a parked session out.
		e.Verdict = VerdictHeadless
		e.Reason = fmt.Sprintf("parked (parkedJobId %q): Claude Code does not list it as a peer", r.ParkedJobID)
	case l.DomainMatches == No:
		e.Verdict = VerdictForeign
		e.Reason = fmt.Sprintf("pidDomain %s is not ours (%s)", r.PIDDomain, l.OurDomain)
		e.HarnessMayList = runs
		e.Unchecked = nil // what the probe of a foreign pid could not check says nothing of it
	case l.Alive == No && l.Zombie:
		e.Verdict = VerdictStale
		e.Reason = fmt.Sprintf("pid %d has exited (zombie, not yet reaped)", r.PID)
		e.HarnessMayList = runs
	case l.Alive == No:
		e.Verdict = VerdictStale
		e.Reason = fmt.Sprintf("pid %d is not running", r.PID)
	case l.StartMatches == No:
		e.Verdict = VerdictReused
		start, field, _ := r.CheckedStart()
		if start == "" {
			start = `""`
		}
		e.Reason = fmt.Sprintf("pid %d started at %s, record says %s %s", r.PID, l.ActualStart, field, start)
		// Claude Code compares only a procStart written as a string.
		e.HarnessMayList = r.ProcStartNumber && field == "procStart"
	case l.Alive == Unknown:
		// Never guess: a pid we could not probe is not called live.
		e.Verdict = VerdictStale
		e.Reason = fmt.Sprintf("pid %d could not be probed: %s", r.PID, strings.Join(l.Unchecked, "; "))
	default:
		e.Verdict = VerdictLive
	}
	if e.Verdict == VerdictLive {
		switch {
		case r.SessionID == "":
			e.Unaddressable = "record has no sessionId"
		case r.Name == "":
			e.Unaddressable = "record has no name"
		case r.SocketPath == "":
			e.Unaddressable = "record has no messagingSocketPath"
			switch r.Version {
			case "":
			case "2.1.224":
				e.Unaddressable += " (Claude Code 2.1.224 publishes no messaging socket)"
			default:
				// Measured: 2.1.224 publishes none, 2.1.328 does; say only
				// what the record claims.
				e.Unaddressable += " (the record says Claude Code " + r.Version + ")"
			}
		case !strings.HasPrefix(r.SocketPath, "/"):
			// Claude Code writes absolute paths; a relative one (or a Windows
			// pipe name) would be resolved against peerctl's own directory.
			e.Unaddressable = fmt.Sprintf("messagingSocketPath %q is not an absolute path", r.SocketPath)
		default:
			e.Addressable = true
		}
	}
	return e
}

// canonicalRecordFile reports whether name is "<pid>.json" as Claude Code
// 2.1.328 reads the registry: digits without a leading zero, pid above 1.
func canonicalRecordFile(name string) bool {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || digits == "" || digits[0] == '0' || len(digits) > 10 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return digits != "1"
}

// ProblemVerdict is the verdict of a record that could not be used (its
// ProblemVerdict, malformed when unset) and the problem in words.
func ProblemVerdict(r Record) (Verdict, string) {
	if r.ProblemVerdict == VerdictUnknown {
		return VerdictMalformed, r.Problem
	}
	return r.ProblemVerdict, r.Problem
}

// PIDVerdict is the verdict of a record's process, for the harnesses whose
// records name one process: stale when it has exited (a zombie too) or
// could not be probed, reused (reused says why) when it started at another
// time, else live.
func PIDVerdict(r Record, l Liveness, reused func() string) (Verdict, string) {
	switch {
	case l.Alive == No && l.Zombie:
		return VerdictStale, fmt.Sprintf("pid %d has exited (zombie, not yet reaped)", r.PID)
	case l.Alive == No:
		return VerdictStale, fmt.Sprintf("pid %d is not running", r.PID)
	case l.StartMatches == No:
		return VerdictReused, reused()
	case l.Alive == Unknown:
		return VerdictStale, fmt.Sprintf("pid %d could not be probed: %s", r.PID, strings.Join(l.Unchecked, "; "))
	}
	return VerdictLive, ""
}
