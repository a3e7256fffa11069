package domain

import (
	"fmt"
	"strings"
)

// qwenSpec is Qwen Code's (0.23.0–0.24.4; docs/QWEN-CODE-FACTS.md): its
// endpoints pin the session id, which one process changes on /clear and
// /resume, and a reply's from is the sender's ipcPath, its record's socket.
var qwenSpec = HarnessSpec{
	Word: "qwen-code", Title: "Qwen Code", Prefix: EndpointPrefixQwen, Pins: "session id",
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint pins session id %s but pid %d now carries %s (Qwen Code changes it on /clear and /resume); list again for the new endpoint", pinned, pid, now)
	},
	Classify: classifyQwen,
	ReplyFrom: func(in Inbound, target Session) bool {
		return target.SocketPath() != "" && in.From == target.SocketPath()
	},
}

// classifyQwen is Classify for a Qwen Code record (registry format v1,
// Qwen Code 0.23.0–0.24.4; docs/QWEN-CODE-FACTS.md). The verdicts and their
// order are Claude Code's: file problems (unreadable, malformed, misnamed,
// unsupported schemaVersion), foreign pid namespace (a record without
// pidNs counts as foreign: Qwen Code on Linux never lists one), dead pid
// (stale), start mismatch — another boot or other start ticks — (reused),
// else live. Every Qwen Code kind (tui, headless, serve, external) is a
// session; it is addressable when it publishes an absolute ipcPath.
func classifyQwen(r Record, l Liveness) Entry {
	e := Entry{Record: r, Unchecked: l.Unchecked}
	switch {
	case r.Problem != "":
		e.Verdict, e.Reason = problemVerdict(r)
	case l.DomainMatches == No:
		e.Verdict = VerdictForeign
		e.Reason = fmt.Sprintf("pidNs %s is not ours (%s)", r.PIDDomain, l.OurDomain)
		if r.PIDDomain == "" {
			e.Reason = "record has no pidNs; Qwen Code on Linux lists no such record"
		}
		e.Unchecked = nil
	default:
		e.Verdict, e.Reason = pidVerdict(r, l, func() string {
			return fmt.Sprintf("pid %d started at %s, record says procStart %s", r.PID, l.ActualStart, r.ProcStart)
		})
	}
	if e.Verdict != VerdictLive {
		return e
	}
	switch {
	case r.SessionID == "":
		e.Unaddressable = "record has no sessionId"
	case r.SocketPath == "":
		e.Unaddressable = "record has no ipcPath: cross-session messaging is off in this session (setting agents.crossSessionMessaging, read at start"
		if strings.HasPrefix(r.Version, "0.23.") {
			e.Unaddressable += "; Qwen Code " + r.Version + " has it off by default"
		}
		e.Unaddressable += ")"
	case !strings.HasPrefix(r.SocketPath, "/"):
		e.Unaddressable = fmt.Sprintf("ipcPath %q is not an absolute path", r.SocketPath)
	default:
		e.Addressable = true
	}
	return e
}

// problemVerdict is the verdict of a record that could not be used (its
// ProblemVerdict, malformed when unset) and the problem in words.
func problemVerdict(r Record) (Verdict, string) {
	if r.ProblemVerdict == VerdictUnknown {
		return VerdictMalformed, r.Problem
	}
	return r.ProblemVerdict, r.Problem
}

// pidVerdict is the verdict of a record's process, for the harnesses whose
// records name one process: stale when it has exited (a zombie too) or
// could not be probed, reused (reused says why) when it started at another
// time, else live.
func pidVerdict(r Record, l Liveness, reused func() string) (Verdict, string) {
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
