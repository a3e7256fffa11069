package fsregistry

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/domain"
)

// EndpointPrefix starts every Claude Code endpoint of protocol version 1:
//
//	cc-peer:v1:<pid>:<name>:<socket>
//
// escaped as domain.Endpoint says. It pins the session's name, besides
// the pid and the messaging socket.
const EndpointPrefix = "cc-peer:v1:"

// Kind is Claude Code's value in the domain's closed set of harnesses: the
// zero Harness (domain.HarnessClaudeCode), whose spec this package
// supplies.
var Kind = domain.RegisterZeroHarness(spec)

// NewEndpoint builds a cc-peer endpoint; pid must be positive, name and
// socket non-empty.
func NewEndpoint(pid int, name, socket string) (domain.Endpoint, error) {
	return domain.NewHarnessEndpoint(Kind, pid, name, socket)
}

// Spec is what the domain knows of Claude Code (2.1.x;
// docs/CLAUDE-CODE-FACTS.md): its endpoints pin the session's name, its
// records are classified by classify, a reply names its sender by the
// sender's socket, and Claude Code reads a record under the pid of its
// file's name.
var spec = domain.HarnessSpec{
	Word: "claude-code", Title: "Claude Code", Prefix: EndpointPrefix, Pins: "name",
	Key: func(r domain.Record) string { return r.Name },
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint names %q but pid %d is now named %q", pinned, pid, now)
	},
	Classify:  classify,
	ReplyFrom: func(in domain.Inbound, target domain.Session) bool { return in.IsFrom(target.SocketPath()) },
	FilePID: func(file string) (int, bool) {
		if !canonicalRecordFile(file) {
			return 0, false
		}
		pid, err := strconv.Atoi(strings.TrimSuffix(file, ".json"))
		return pid, err == nil
	},
}

// classify is the spec's Classify for a Claude Code record, in this order: file
// problems (unreadable, malformed, misnamed), headless kinds (anything but
// exactly "interactive"), foreign pid domain, dead pid (stale), start-time
// mismatch (reused), else live.
//
// Its HarnessMayList is Claude Code's own listing (read from 2.1.328's
// listing code and measured with claude agents --json): it ignores
// pidDomain, lists a zombie, compares only a procStart written as a
// string, and takes the pid from the file name; it drops a record whose
// pid is not running here or whose procStart names another process.
func classify(r domain.Record, l domain.Liveness) domain.Entry {
	e := domain.Entry{Record: r, Unchecked: l.Unchecked}
	// runs: Claude Code's listing would take the pid for the record's
	// process (it answers kill(pid, 0), zombies too, and no procStart
	// contradicts it).
	runs := (l.Alive != domain.No || l.Zombie) && l.StartMatches != domain.No
	switch {
	case r.Problem != "":
		e.Verdict = r.ProblemVerdict
		if e.Verdict == domain.VerdictUnknown {
			e.Verdict = domain.VerdictMalformed
		}
		e.Reason = r.Problem
		// Claude Code takes the pid from a file named <pid>.json (digits,
		// no leading zero) whatever the record's pid field says (or holds),
		// ignores a procStart that is not a string, and lists it when that
		// pid runs; we do not probe that pid, so such a file counts when
		// its JSON was read (a name or socket to count it by).
		e.HarnessMayList = (e.Verdict == domain.VerdictMisnamed || e.Verdict == domain.VerdictMalformed) && canonicalRecordFile(r.File) && !r.Parked()
	case r.Kind != domain.KindInteractive:
		e.Verdict = domain.VerdictHeadless
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
		e.Verdict = domain.VerdictHeadless
		e.Reason = fmt.Sprintf("parked (parkedJobId %q): Claude Code does not list it as a peer", r.ParkedJobID)
	case l.DomainMatches == domain.No:
		e.Verdict = domain.VerdictForeign
		e.Reason = fmt.Sprintf("pidDomain %s is not ours (%s)", r.PIDDomain, l.OurDomain)
		e.HarnessMayList = runs
		e.Unchecked = nil // what the probe of a foreign pid could not check says nothing of it
	case l.Alive == domain.No && l.Zombie:
		e.Verdict = domain.VerdictStale
		e.Reason = fmt.Sprintf("pid %d has exited (zombie, not yet reaped)", r.PID)
		e.HarnessMayList = runs
	case l.Alive == domain.No:
		e.Verdict = domain.VerdictStale
		e.Reason = fmt.Sprintf("pid %d is not running", r.PID)
	case l.StartMatches == domain.No:
		e.Verdict = domain.VerdictReused
		start, field, _ := r.CheckedStart()
		if start == "" {
			start = `""`
		}
		e.Reason = fmt.Sprintf("pid %d started at %s, record says %s %s", r.PID, l.ActualStart, field, start)
		// Claude Code compares only a procStart written as a string.
		e.HarnessMayList = r.ProcStartNumber && field == "procStart"
	case l.Alive == domain.Unknown:
		// Never guess: a pid we could not probe is not called live.
		e.Verdict = domain.VerdictStale
		e.Reason = fmt.Sprintf("pid %d could not be probed: %s", r.PID, strings.Join(l.Unchecked, "; "))
	default:
		e.Verdict = domain.VerdictLive
	}
	if e.Verdict == domain.VerdictLive {
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
