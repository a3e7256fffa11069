package domain

import (
	"errors"
	"fmt"
	"strings"
)

// Codex record kinds (Record.Kind of a Codex thread): who holds the
// thread open (adapters/codex, measured on Codex 0.171.0: docs/CODEX.md).
const (
	// CodexKindClient: the app-server daemon holds the thread and a
	// client (the TUI, pid PID) runs in its folder.
	CodexKindClient = "daemon-client"
	// CodexKindNoDaemon: a TUI started with --no-daemon holds the thread
	// itself (its writer lock and rollout are open in process PID). No
	// socket serves it (its record's SocketPath is ""): `codex queue`
	// reaches it, daemon or none.
	CodexKindNoDaemon = "no-daemon"
)

// CodexQueueAddress is the last part of a --no-daemon thread's endpoint
// (codex-peer:v1:<pid>:<thread id>:queue), where a daemon thread's has
// its control socket: no socket serves such a thread, Codex's queue
// (`codex queue`, the home's queue_1.sqlite) reaches it.
const CodexQueueAddress = "queue"

// codexSpec is Codex's (0.171.0; docs/CODEX.md): its endpoints pin the
// thread id, a UUID; every thread of a Codex home shares the home's control
// socket (a --no-daemon thread has CodexQueueAddress in its place), and
// the courier names a reply by the thread it came from.
var codexSpec = HarnessSpec{
	Word: "codex", Title: "Codex", Prefix: EndpointPrefixCodex, Pins: "thread id",
	ValidKey: func(key string) error {
		if !IsUUID(key) {
			return errors.New("not a UUID")
		}
		return nil
	},
	EndpointSocket: func(r Record) string {
		if r.Kind == CodexKindNoDaemon {
			return CodexQueueAddress
		}
		return r.SocketPath
	},
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint pins thread id %s but pid %d now has %s open; list again for the new endpoint", pinned, pid, now)
	},
	SharedSocket: true,
	Classify:     classifyCodex,
}

// classifyCodex is Classify for a Codex thread. The registry decides who
// holds the thread (a daemon thread no client has open is headless, one
// it cannot tell is ambiguous: both arrive as the record's problem); the
// holder's process is then checked as any record's: dead pid (stale),
// start mismatch (reused), else live. A live thread is addressable when
// its id is a UUID and, unless a --no-daemon TUI holds it (reached by
// Codex's queue, no socket), the control socket path is absolute.
func classifyCodex(r Record, l Liveness) Entry {
	e := Entry{Record: r, Unchecked: l.Unchecked}
	switch {
	case r.Problem != "":
		e.Verdict, e.Reason = problemVerdict(r)
		e.Unchecked = nil
	default:
		e.Verdict, e.Reason = pidVerdict(r, l, func() string {
			return fmt.Sprintf("pid %d started at %s, not at %s when the thread was read", r.PID, l.ActualStart, r.ProcStart)
		})
	}
	if e.Verdict != VerdictLive {
		return e
	}
	switch {
	case !IsUUID(r.SessionID):
		e.Unaddressable = fmt.Sprintf("thread id %q is not a UUID", r.SessionID)
	case r.Kind == CodexKindNoDaemon:
		e.Addressable = true
	case !strings.HasPrefix(r.SocketPath, "/"):
		e.Unaddressable = fmt.Sprintf("control socket %q is not an absolute path", r.SocketPath)
	default:
		e.Addressable = true
	}
	return e
}

// IsUUID reports whether s is a UUID in its canonical text form (8-4-4-4-12
// hex digits, either case), as Codex writes thread ids.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
