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
