package qwenregistry

import (
	"fmt"
	"strings"

	"github.com/peerctl/peerctl/domain"
)

// EndpointPrefix starts every Qwen Code endpoint of protocol version 1:
//
//	qwen-peer:v1:<pid>:<sessionId>:<socket>
//
// escaped as cc-peer endpoints are (domain.Endpoint). Where a cc-peer
// endpoint pins the session's name, a qwen-peer endpoint pins its session
// id: Qwen Code's names are not unique by design (cwd basename + 2 hex
// digits), and one process changes its session id on /clear and /resume.
// An endpoint taken before a /clear therefore refuses (identity_mismatch)
// instead of reaching the new conversation; re-list to get the new one.
const EndpointPrefix = "qwen-peer:v1:"

// Kind is Qwen Code's value in the domain's closed set of harnesses.
var Kind = domain.RegisterHarness(spec)

// NewEndpoint builds a qwen-peer endpoint; pid must be positive, sessionID
// and socket non-empty.
func NewEndpoint(pid int, sessionID, socket string) (domain.Endpoint, error) {
	return domain.NewHarnessEndpoint(Kind, pid, sessionID, socket)
}

// MaxMessage is the most bytes one message to a Qwen Code session may
// have. Its inbox reads a line of up to 1 MiB, but while a turn runs the
// TUI shows each queued message (up to three) as a one-line preview of
// its whole text, measured and truncated again on every redraw (the
// spinner's): the CPU a redraw takes grows with the text. 0.24.4 on a
// loaded 2-core machine: with 32 KB queued, a later send's connection
// was closed after 10 s and more (1.5 s before) and receipts stopped;
// a user's session stopped answering its inbox at 32 KB and at 64 KiB,
// when 8 KB and 16 KB were delivered. 16 KiB is half the smallest size
// seen to wedge it; Qwen Code counts UTF-16 units, never more than the
// UTF-8 bytes counted here (docs/QWEN-CODE-FACTS.md).
const MaxMessage = 16 * 1024

// spec is what the domain knows of Qwen Code (0.23.0–0.24.4;
// docs/QWEN-CODE-FACTS.md): its endpoints pin the session id, which one
// process changes on /clear and /resume, and a reply's from is the
// sender's ipcPath, its record's socket.
var spec = domain.HarnessSpec{
	Word: "qwen-code", Title: "Qwen Code", Prefix: EndpointPrefix, Pins: "session id",
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint pins session id %s but pid %d now carries %s (Qwen Code changes it on /clear and /resume); list again for the new endpoint", pinned, pid, now)
	},
	Classify:   classify,
	MaxMessage: MaxMessage, MaxMessageWhy: "a larger one can wedge its inbox",
	ReplyFrom: func(in domain.Inbound, target domain.Session) bool {
		return target.SocketPath() != "" && in.From == target.SocketPath()
	},
}

// classify is the spec's Classify for a Qwen Code record (registry format
// v1, Qwen Code 0.23.0–0.24.4; docs/QWEN-CODE-FACTS.md). The verdicts and
// their order are Claude Code's: file problems (unreadable, malformed,
// misnamed, unsupported schemaVersion), foreign pid namespace (a record
// without pidNs counts as foreign: Qwen Code on Linux never lists one),
// dead pid (stale), start mismatch — another boot or other start ticks —
// (reused), else live. Every Qwen Code kind (tui, headless, serve,
// external) is a session; it is addressable when it publishes an absolute
// ipcPath.
func classify(r domain.Record, l domain.Liveness) domain.Entry {
	e := domain.Entry{Record: r, Unchecked: l.Unchecked}
	switch {
	case r.Problem != "":
		e.Verdict, e.Reason = domain.ProblemVerdict(r)
	case l.DomainMatches == domain.No:
		e.Verdict = domain.VerdictForeign
		e.Reason = fmt.Sprintf("pidNs %s is not ours (%s)", r.PIDDomain, l.OurDomain)
		if r.PIDDomain == "" {
			e.Reason = "record has no pidNs; Qwen Code on Linux lists no such record"
		}
		e.Unchecked = nil
	default:
		e.Verdict, e.Reason = domain.PIDVerdict(r, l, func() string {
			return fmt.Sprintf("pid %d started at %s, record says procStart %s", r.PID, l.ActualStart, r.ProcStart)
		})
	}
	if e.Verdict != domain.VerdictLive {
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
