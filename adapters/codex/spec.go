package codex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/peerctl/peerctl/domain"
)

// Codex record kinds (Record.Kind of a Codex thread): who holds the thread
// open (measured on Codex 0.171.0: docs/CODEX.md).
const (
	// KindClient: the app-server daemon holds the thread and a client (the
	// TUI, pid PID) runs in its folder.
	KindClient = "daemon-client"
	// KindNoDaemon: a TUI started with --no-daemon holds the thread itself
	// (its writer lock and rollout are open in process PID). No socket
	// serves it (its record's SocketPath is ""): `codex queue` reaches it,
	// daemon or none.
	KindNoDaemon = "no-daemon"
	// KindExec: a headless run (`codex exec`, alias `e`, or `codex
	// review`) holds the thread's writer lock and rollout, pid PID. It is
	// no session: it prints its own answer and exits, and a text sent to
	// it would never be seen. Its record always has a Problem (headless),
	// so it is listed under --all with that reason and every send is
	// refused.
	KindExec = "exec"
)

// QueueAddress is the last part of a --no-daemon thread's endpoint
// (codex-peer:v1:<pid>:<thread id>:queue), where a daemon thread's has its
// control socket: no socket serves such a thread, Codex's queue (`codex
// queue`, the home's queue_1.sqlite) reaches it.
const QueueAddress = "queue"

// EndpointPrefix starts every Codex endpoint of protocol version 1:
//
//	codex-peer:v1:<pid>:<threadId>:<daemon socket>
//
// escaped as cc-peer endpoints are (domain.Endpoint). It pins the thread id
// (Codex's one id for a thread, session and conversation) and the pid that
// has the thread open: a client's (the TUI's), or the --no-daemon TUI's
// own. The socket is the daemon's socket the Codex home's control socket
// links to, which every thread of that home shares; a --no-daemon thread,
// which no socket serves, has QueueAddress there.
const EndpointPrefix = "codex-peer:v1:"

// Kind is Codex's value in the domain's closed set of harnesses.
var Kind = domain.RegisterHarness(spec)

// NewEndpoint builds a codex-peer endpoint; pid must be positive, threadID
// a UUID (IsUUID) and socket non-empty.
func NewEndpoint(pid int, threadID, socket string) (domain.Endpoint, error) {
	return domain.NewHarnessEndpoint(Kind, pid, threadID, socket)
}

// spec is what the domain knows of Codex (0.171.0; docs/CODEX.md): its
// endpoints pin the thread id, a UUID; every thread of a Codex home shares
// the home's control socket (a --no-daemon thread has QueueAddress in its
// place), and the courier names a reply by the thread it came from.
var spec = domain.HarnessSpec{
	Word: "codex", Title: "Codex", Prefix: EndpointPrefix, Pins: "thread id",
	ValidKey: func(key string) error {
		if !IsUUID(key) {
			return errors.New("not a UUID")
		}
		return nil
	},
	EndpointSocket: func(r domain.Record) string {
		if r.Kind == KindNoDaemon {
			return QueueAddress
		}
		return r.SocketPath
	},
	Moved: func(pinned, now string, pid int) string {
		return fmt.Sprintf("endpoint pins thread id %s but pid %d now has %s open; list again for the new endpoint", pinned, pid, now)
	},
	SharedSocket: true,
	Classify:     classify,
}

// classify is the spec's Classify for a Codex thread. The registry decides
// who holds the thread (a daemon thread no client has open is headless,
// one it cannot tell is ambiguous: both arrive as the record's problem);
// the holder's process is then checked as any record's: dead pid (stale),
// start mismatch (reused), else live. A live thread is addressable when
// its id is a UUID and, unless a --no-daemon TUI holds it (reached by
// Codex's queue, no socket), the control socket path is absolute.
func classify(r domain.Record, l domain.Liveness) domain.Entry {
	e := domain.Entry{Record: r, Unchecked: l.Unchecked}
	switch {
	case r.Problem != "":
		e.Verdict, e.Reason = domain.ProblemVerdict(r)
		e.Unchecked = nil
	default:
		e.Verdict, e.Reason = domain.PIDVerdict(r, l, func() string {
			return fmt.Sprintf("pid %d started at %s, not at %s when the thread was read", r.PID, l.ActualStart, r.ProcStart)
		})
	}
	if e.Verdict != domain.VerdictLive {
		return e
	}
	switch {
	case !IsUUID(r.SessionID):
		e.Unaddressable = fmt.Sprintf("thread id %q is not a UUID", r.SessionID)
	case r.Kind == KindNoDaemon:
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
