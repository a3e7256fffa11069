package domain

import (
	"fmt"
	"time"
)

// Status is a session's activity as its record reports it.
type Status int

// Status values. Unknown covers a record written before the session settled
// (Claude Code adds "status" a moment after the file first appears) and any
// word a future version may use. Waiting is a session stopped on its user:
// a dialog, a permission prompt, a question (Record.WaitingFor says which);
// Claude Code writes it as "status":"waiting" beside "waitingFor" (2.1.224
// to 2.1.332, read from its bundle).
const (
	StatusUnknown Status = iota
	StatusIdle
	StatusBusy
	StatusWaiting
)

// String returns "idle", "busy", "waiting" or "unknown".
func (s Status) String() string {
	switch s {
	case StatusIdle:
		return "idle"
	case StatusBusy:
		return "busy"
	case StatusWaiting:
		return "waiting"
	default:
		return "unknown"
	}
}

// ParseStatus maps the record's "status" word; anything else is StatusUnknown.
func ParseStatus(word string) Status {
	switch word {
	case "idle":
		return StatusIdle
	case "busy":
		return StatusBusy
	case "waiting":
		return StatusWaiting
	default:
		return StatusUnknown
	}
}

// StatusText is a status for people: the word, and for a waiting session
// what it waits for ("waiting (dialog open)"; "waiting" when the record
// does not say).
func StatusText(status, waitingFor string) string {
	if status == StatusWaiting.String() && waitingFor != "" {
		return status + " (" + waitingFor + ")"
	}
	return status
}

// KindInteractive is the "kind" of an interactive Claude Code session, the
// only kind that is a peer. Claude Code 2.1.328 also writes "print"
// (claude -p), "bg", "daemon" and "daemon-worker".
const KindInteractive = "interactive"

// SettleTime is how long a session that has just started usually takes to
// settle. Measured on Claude Code 2.1.328: its record gets "status" 13–15 s
// after the file first appears, and until then the session holds the
// messages posted to it (released later, after a [Cross-session delivery
// notice] saying it holds them); on a loaded machine settling took over 30 s.
const SettleTime = 15 * time.Second

// SettleLimit bounds Record.Starting: a record that still shows no status
// this long after its session started is taken as settled all the same (a
// version that never writes one).
const SettleLimit = 2 * time.Minute

// Record is one entry of the registry folder <config dir>/sessions/ as read
// from disk, before any liveness check. The file format is Claude Code's
// <pid>.json (fields observed in 2.1.224 and 2.1.328); unknown fields are
// ignored. Zero values mean "absent".
type Record struct {
	// Harness is the program whose registry held the record (zero:
	// Claude Code). A Qwen Code record maps its fields onto this one:
	// see adapters/qwenregistry.
	Harness Harness

	// File is the entry's base name, e.g. "4652.json"; Path its full path.
	File string
	Path string
	// ModTime is the file's modification time (zero if unknown).
	ModTime time.Time

	// Problem is set when the entry could not be used at all; the verdict
	// then comes from ProblemVerdict (malformed, unreadable or misnamed).
	// ProblemShort is Problem for a person's one line, as a refusal's
	// Short ("" when Problem is short already).
	Problem        string
	ProblemVerdict Verdict
	ProblemShort   string

	PID       int       // "pid"
	SessionID string    // "sessionId" (a UUID)
	Cwd       string    // "cwd"
	StartedAt time.Time // "startedAt", epoch milliseconds
	// ProcStart is "procStart" as written (a string or a number, as text):
	// field 22 of /proc/<pid>/stat, clock ticks since boot. ProcStartFt is
	// "procStartFt" when it is a string: Claude Code 2.1.328 checks it
	// instead. CheckedStart says which one counts.
	ProcStart   string
	ProcStartFt string
	// ProcStartEmpty and ProcStartFtEmpty are set when the field is there
	// as "": a value to Claude Code, which then never matches a start.
	ProcStartEmpty, ProcStartFtEmpty bool
	// ProcStartNumber is set when "procStart" was written as a JSON number:
	// peerctl compares it all the same, Claude Code 2.1.328 does not.
	ProcStartNumber bool
	// ParkedJobID is "parkedJobId" (2.1.328): a session parked as a job,
	// which Claude Code's listing leaves out.
	ParkedJobID  string
	ParkedEmpty  bool      // "parkedJobId" is there as "": parked all the same
	Version      string    // "version" of Claude Code
	PeerProtocol int       // "peerProtocol" (1 in 2.1.328; 0 when absent)
	Kind         string    // "kind": "interactive", "print", "bg", "daemon", …
	Entrypoint   string    // "entrypoint", e.g. "cli"
	PIDDomain    string    // "pidDomain": linux:<machine-id>:pid:[<pid-ns inode>]
	Tmux         string    // "tmux": <session>:@<window>.%<pane>
	SocketPath   string    // "messagingSocketPath" (absent in 2.1.224)
	Name         string    // "name"
	NameSource   string    // "nameSource": "derived" or "user"
	NameSince    time.Time // "nameSince", epoch milliseconds
	Status       Status    // "status"
	// WaitingFor is "waitingFor" beside "status":"waiting": what the
	// session waits on, in Claude Code's words ("dialog open", "permission
	// prompt", "input needed", "sandbox request", "worker request", …);
	// "" for any other status.
	WaitingFor string
	UpdatedAt  time.Time // "updatedAt", epoch milliseconds
	// StatusUpdatedAt is "statusUpdatedAt", epoch milliseconds: when
	// "status" last changed (Claude Code 2.1.328 writes it with status).
	StatusUpdatedAt time.Time

	// Warnings notes oddities that did not make the record unusable, e.g. a
	// timestamp that looks like seconds rather than milliseconds.
	Warnings []string
}

// MaxPlausibleMillis is the last millisecond of year 9999 (UTC): a larger
// epoch-milliseconds value is another unit (microseconds would put a 2026
// date in year 58000) and would not even format as RFC 3339.
const MaxPlausibleMillis = 253402300799999

// MillisToTime converts an epoch-milliseconds field to a time. Values that
// look like epoch seconds (below 10^11, i.e. before 1973 as milliseconds) or
// like a finer unit (above MaxPlausibleMillis) are still converted as
// milliseconds but reported with ok=false so the caller can warn instead of
// printing a wrong date.
func MillisToTime(ms int64) (t time.Time, ok bool) {
	if ms <= 0 {
		return time.Time{}, false
	}
	if ms < 1e11 || ms > MaxPlausibleMillis {
		return time.UnixMilli(ms), false
	}
	return time.UnixMilli(ms), true
}

// StatusesBetween returns the statuses a session passed through between
// two reads of its record, prev then cur, in order, ending with cur's; nil
// when nothing changed. It is the one rule by which `watch` reports status
// events and `send --wait` sees a turn, so that every reader agrees on
// what a record says whenever it happened to read: the record's status
// and the time it last changed (StatusTime) are the source of truth, not
// which rewrites a reader caught. A status other than prev's is one
// change; the same idle or busy with a later statusUpdatedAt means the
// other status came and went between the two reads (a turn that began and
// ended, or ended and a new one began), so two changes. Only
// statusUpdatedAt counts for that: updatedAt changes with any rewrite (a
// rename), and a record without statusUpdatedAt (Qwen Code) shows only
// changes of its word. A session still waiting, but on something else
// (WaitingFor changed: its dialog closed and a prompt opened), is one
// change, to waiting.
func StatusesBetween(prev, cur Record) []Status {
	switch {
	case cur.Status != prev.Status:
		return []Status{cur.Status}
	case cur.Status == StatusWaiting && cur.WaitingFor != prev.WaitingFor:
		return []Status{StatusWaiting}
	case prev.StatusUpdatedAt.IsZero() || !cur.StatusUpdatedAt.After(prev.StatusUpdatedAt):
		return nil
	case cur.Status == StatusIdle:
		return []Status{StatusBusy, StatusIdle}
	case cur.Status == StatusBusy:
		return []Status{StatusIdle, StatusBusy}
	}
	return nil
}

// Starting reports whether r's session is still starting at now: its
// record has never shown a status (no "status" word, no status time) and
// the session started less than SettleLimit ago. It is the one rule for a
// session that has just started, of a harness whose records publish a
// status (ports.ConfirmRule): such a session holds what is posted to it
// until it has settled. False when the start is unknown (startedAt absent):
// unknown is not taken as starting.
func (r Record) Starting(now time.Time) bool {
	if r.Status != StatusUnknown || !r.StatusTime().IsZero() || r.StartedAt.IsZero() {
		return false
	}
	d := now.Sub(r.StartedAt)
	return d < SettleLimit && d > -SettleLimit // a clock moved back ends it too
}

// StatusTime is when the record's status last changed: StatusUpdatedAt,
// or UpdatedAt when the record has no statusUpdatedAt (Claude Code
// rewrites updatedAt with every status change), or the zero time.
func (r Record) StatusTime() time.Time {
	if !r.StatusUpdatedAt.IsZero() {
		return r.StatusUpdatedAt
	}
	return r.UpdatedAt
}

// String describes the record briefly for messages.
func (r Record) String() string {
	return fmt.Sprintf("%s (pid %d, session %s, name %q)", r.File, r.PID, r.SessionID, r.Name)
}

// Label names the record's session in a message, never with an empty
// id: `session <id> (pid <pid>, "<name>")`, or for a record with no
// session id (a live process whose sessions cannot be listed, as a plain
// opencode TUI) `<harness> pid <pid> ("<name>", no session id)`.
func (r Record) Label() string {
	if r.SessionID != "" {
		return fmt.Sprintf("session %s (pid %d, %q)", r.SessionID, r.PID, r.Name)
	}
	return fmt.Sprintf("%s pid %d (%q, no session id)", r.Harness, r.PID, r.Name)
}

// CheckedStart returns the process start to compare with the live
// process's, the field it comes from, and whether there is one to compare:
// procStartFt when present (as Claude Code 2.1.328 does), else procStart.
func (r Record) CheckedStart() (start, field string, set bool) {
	if r.ProcStartFt != "" || r.ProcStartFtEmpty {
		return r.ProcStartFt, "procStartFt", true
	}
	return r.ProcStart, "procStart", r.ProcStart != "" || r.ProcStartEmpty
}

// Parked reports whether the record names a parked session
// ("parkedJobId" present as a string, even ""), which Claude Code 2.1.328
// does not list.
func (r Record) Parked() bool { return r.ParkedJobID != "" || r.ParkedEmpty }
