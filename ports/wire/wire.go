// Package wire holds the documents peerctl prints with --json
// (docs/OUTPUT.md) and reads back from a far side's peerctl over ssh: one
// definition for both ends, versioned by ports.RemoteProtocol (a far side
// is used only when it speaks the same one), and the rules for reading a
// far side's run: exact keys, bounded and escaped text, its refusals and
// failures as errors of this side.
package wire

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/peerctl/peerctl/domain"
)

// Session is one object of `list --json` and of `show --json`. Field
// names are camelCase and stable (docs/OUTPUT.md).
type Session struct {
	// Host is the machine (--host DEST) the session runs on; "" for this one.
	Host       string `json:"host"`
	Harness    string `json:"harness"` // the harness's word (domain.Harness)
	SessionID  string `json:"sessionId"`
	PID        int    `json:"pid"`
	Name       string `json:"name"`
	NameSource string `json:"nameSource"`
	Cwd        string `json:"cwd"`
	Status     string `json:"status"`
	// WaitingFor is, for a waiting session, what it waits on (Claude
	// Code's words: "dialog open", "permission prompt", …).
	WaitingFor    string   `json:"waitingFor,omitempty"`
	Kind          string   `json:"kind"`
	Version       string   `json:"version"`
	StartedAt     string   `json:"startedAt"` // RFC 3339, "" when unknown
	SocketPath    string   `json:"socketPath"`
	Endpoint      string   `json:"endpoint"`
	Addressable   bool     `json:"addressable"`
	Unaddressable string   `json:"unaddressable,omitempty"`
	Verdict       string   `json:"verdict"`
	Reason        string   `json:"reason"`
	File          string   `json:"file"`
	Unchecked     []string `json:"unchecked,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// SessionOf is e as a Session of this machine (Host "").
func SessionOf(e domain.Entry) Session {
	r := e.Record
	return Session{
		Harness: r.Harness.String(), SessionID: r.SessionID, PID: r.PID, Name: r.Name, NameSource: r.NameSource, Cwd: r.Cwd,
		Status: r.Status.String(), WaitingFor: r.WaitingFor, Kind: r.Kind, Version: r.Version, StartedAt: RFC3339(r.StartedAt),
		SocketPath: r.SocketPath, Endpoint: e.Endpoint().String(), Addressable: e.Addressable,
		Unaddressable: e.Unaddressable, Verdict: e.Verdict.String(), Reason: e.Reason, File: r.File,
		Unchecked: e.Unchecked, Warnings: r.Warnings,
	}
}

// TimeLayout is how every time in peerctl's JSON is written
// (docs/OUTPUT.md): RFC 3339 in UTC to the millisecond, always three
// digits, "2026-12-07T04:02:09.183Z" (the precision of Claude Code's
// startedAt and transcript timestamps). time.RFC3339 and RFC3339Nano both
// parse it.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// RFC3339 is t in TimeLayout (cut, not rounded, to the millisecond); ""
// for the zero time. Every JSON time goes through it.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// ListQuery is what `list` asks of a node.
type ListQuery struct {
	// All asks for every record with its verdict, not only live sessions.
	All bool
	// Only keeps these harnesses (none: every one); a node reads only them.
	Only []domain.Harness
}

// Listing is a node's answer to a ListQuery.
type Listing struct {
	// Sessions are the node's entries in list's order (by start time,
	// oldest first, then name, pid and file name: app's listOrder),
	// each with its Host set when the node is another machine.
	Sessions []Session
	// NoRecord: the node's registries hold no record at all, live or not
	// (list --all would show none). Only this machine tells it: false from
	// another machine, which does not say.
	NoRecord bool
	// Partial: a harness asked about could not be read (Notes say which);
	// Sessions hold what could be.
	Partial bool
	// Notes are the node's warnings and notes for people, one line each,
	// as `list` prints them on stderr after "peerctl: " ("warning: …",
	// "note: …"), not yet escaped.
	Notes []string
	// Version is the node's peerctl version as another machine's hello
	// named it ("" for this machine: the caller knows its own).
	Version string
}

// OfHarnesses is l with only's harnesses' sessions (every session when
// only is empty).
func (l Listing) OfHarnesses(only []domain.Harness) Listing {
	if len(only) == 0 {
		return l
	}
	l.Sessions = slices.DeleteFunc(slices.Clone(l.Sessions), func(s Session) bool {
		return !slices.ContainsFunc(only, func(h domain.Harness) bool { return h.String() == s.Harness })
	})
	return l
}

// RefusalDoc is a refusal as every --json output prints it
// (docs/OUTPUT.md, "Refusals").
type RefusalDoc struct {
	OK      bool        `json:"ok"`
	Refusal RefusalBody `json:"refusal"`
}

// RefusalBody is RefusalDoc's refusal.
type RefusalBody struct {
	Reason     string             `json:"reason"`
	Detail     string             `json:"detail"`
	ExitCode   int                `json:"exitCode"`
	Candidates []domain.Candidate `json:"candidates,omitempty"`
	// Suggestions are live names close to a mistyped address (not_live).
	Suggestions []string `json:"suggestions,omitempty"`
	// Status and StatusReason are the target's own receipt word and
	// reason when its receipt refused (Qwen Code: refused, denied, ...).
	Status       string `json:"status,omitempty"`
	StatusReason string `json:"statusReason,omitempty"`
}

// Safe makes text from a registry or a far side (ids, names, paths,
// details that quote them) safe to print for people: unless every rune is
// printable (letters, marks, numbers, punctuation, symbols, the ASCII
// space), the text is shown Go-escaped, so no control sequence, newline,
// invisible or direction-changing character (U+200B, U+202E, U+2028, ...)
// or invalid UTF-8 reaches the terminal raw.
func Safe(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// SafeText is a message's text as sent (a reply, a message, the words of
// an answer), made safe to show people whole: newlines and tabs stay,
// every other character that is not printable (and invalid UTF-8) is
// escaped as Go escapes it, so the text cannot move the cursor, recolour
// the screen or hide a line. Text with nothing to escape is returned as
// it is; once anything is escaped, every backslash is doubled too, so
// that the output reads back one way (a literal `\x1b` shows as `\\x1b`,
// a real ESC as `\x1b`). The CLI prints a reply so, and the dashboard
// shows every text so.
func SafeText(s string) string {
	if !textNeedsEscaping(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}

// textNeedsEscaping reports whether s holds anything SafeText escapes: a
// character that is not printable other than newline and tab, or
// invalid UTF-8.
func textNeedsEscaping(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// Clip cuts s to at most n bytes on a rune boundary, with "…" when cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// LiveInfo is the live part of a session descriptor, for a host that
// catalogs persisted transcripts and wants to mark the ones whose session
// is running. The JSON names are the host descriptor's.
type LiveInfo struct {
	// Endpoint is the session's endpoint (cc-peer:v1:…); "" when the live
	// session cannot receive messages (no socket, name or id).
	Endpoint string `json:"live_endpoint"`
	// Status is "idle", "busy", "waiting" or "unknown".
	Status string `json:"live_status"`
}

// Show is `show --json`: a Session with what its record holds beyond it,
// and what was found on disk (docs/OUTPUT.md).
type Show struct {
	Session
	UpdatedAt        string `json:"updatedAt"`
	ProcStart        string `json:"procStart"`
	ProcStartFt      string `json:"procStartFt,omitempty"`
	PIDDomain        string `json:"pidDomain"`
	Tmux             string `json:"tmux"`
	PeerProtocol     int    `json:"peerProtocol"`
	SocketOnDisk     string `json:"socketOnDisk"` // yes, no, unknown (no path, or a TCP address)
	SocketNote       string `json:"socketNote,omitempty"`
	Transcript       string `json:"transcript"`
	TranscriptExists bool   `json:"transcriptExists"`
	// Path is the record file's whole path on its machine (File is its
	// name); Notes are its harness's notes on it, for people.
	Path  string   `json:"path"`
	Notes []string `json:"notes,omitempty"`
	// Glosses are the session's harness's words for the rows (show
	// --explain; ports.Glosser): not in --json, whose fields
	// docs/OUTPUT.md explains. A far side's show has none.
	Glosses map[string]string `json:"-"`
}

// OutboxMessage is one message of `peerctl outbox --json` and `outbox show
// --json` (docs/OUTPUT.md), and of the dashboard's data (serve --http).
// Times are RFC 3339 in UTC, to the nanosecond.
type OutboxMessage struct {
	ID      int64  `json:"id"`
	Key     string `json:"key,omitempty"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Address string `json:"address"`
	// Host is the machine the message is for (send --durable --host);
	// absent for this one.
	Host      string `json:"host,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Text      string `json:"text"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	ExpiresAt string `json:"expiresAt"`
	// NextAttemptAt is when a stored message is next tried ("" otherwise).
	NextAttemptAt string `json:"nextAttemptAt,omitempty"`
	Attempts      int    `json:"attempts"`
	// Tries counts every try, whatever came of it (the backoff's count);
	// Attempts only those that began a hand-over.
	Tries      int    `json:"tries"`
	Outcome    string `json:"outcome,omitempty"`
	Transport  string `json:"transport,omitempty"`
	MsgID      string `json:"msgId,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// Sender is who sent it (absent for a message stored before peerctl
	// kept it); Rule the trust policy's rule that held it and ApprovedBy
	// who approved it (outbox approve), absent when none.
	Sender     *Sender `json:"sender,omitempty"`
	Rule       string  `json:"rule,omitempty"`
	ApprovedBy string  `json:"approvedBy,omitempty"`
	// History is every change, oldest first (outbox show only).
	History []OutboxEvent `json:"history,omitempty"`
}

// FarHead heads the reason of each change a message went through in
// the outbox of the node that took it, as the sender's outbox records it:
// "on WHERE (message ID there): ", or "on WHERE: " when ID is 0 (not
// known). FarOf reads it back.
func FarHead(where string, id int64) string {
	if id == 0 {
		return "on " + where + ": "
	}
	return "on " + where + " (message " + strconv.FormatInt(id, 10) + " there): "
}

// FarOf reads a reason headed by FarHead(where, id): the id (0 when the
// head names none) and the reason there; ok is false when reason is not
// headed so for where.
func FarOf(reason, where string) (id int64, rest string, ok bool) {
	after, ok := strings.CutPrefix(reason, "on "+where)
	if !ok {
		return 0, "", false
	}
	if rest, ok := strings.CutPrefix(after, ": "); ok {
		return 0, rest, true
	}
	num, ok := strings.CutPrefix(after, " (message ")
	if !ok {
		return 0, "", false
	}
	digits, rest, ok := strings.Cut(num, " there): ")
	if !ok {
		return 0, "", false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != digits {
		return 0, "", false
	}
	return id, rest, true
}

// ReplyQuote bounds, in bytes, the reply's words a replied line keeps.
const ReplyQuote = 200

// repliedPrefix starts every RepliedReason.
const repliedPrefix = "the session replied (from "

// RepliedReason is the reason of a message's replied line: who replied
// (fromName, quoted), the reply's length in bytes and its first words (at
// most ReplyQuote bytes, "…" when cut). ReplyOf reads it back.
func RepliedReason(fromName, text string) string {
	return fmt.Sprintf("%s%q, %d bytes): %s", repliedPrefix, fromName, len(text), Clip(text, ReplyQuote))
}

// ReplyOf reads a RepliedReason: the name of who replied and the words
// kept; ok is false when reason is not one.
func ReplyOf(reason string) (fromName, words string, ok bool) {
	rest, ok := strings.CutPrefix(reason, repliedPrefix)
	if !ok {
		return "", "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", "", false
	}
	name, _ := strconv.Unquote(q)
	_, words, ok = strings.Cut(rest[len(q):], " bytes): ")
	return name, words, ok
}

// OutboxEvent is one change of a message's state in its history.
type OutboxEvent struct {
	At     string `json:"at"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Count is how many changes in a row this line stands for: the outbox
	// folds a change with the state and reason of the line before into it
	// (the dashboard also folds a run of one state); omitted: one. LastAt
	// is the latest of them (At the first), with Count only.
	Count  int    `json:"count,omitempty"`
	LastAt string `json:"lastAt,omitempty"`
}

// RedactURLs is the server list s (URL[,URL...], NATS servers as
// --nats takes them) as it may be printed (errors, logs, status, a
// dashboard): each URL's password, or its token (a user with no password,
// as NATS reads nats://TOKEN@HOST), written "xxxxx" (url.URL.Redacted's
// mark). An entry that does not parse keeps nothing before its last "@".
func RedactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.Host == "" {
			if at := strings.LastIndex(p, "@"); at >= 0 {
				scheme, _, ok := strings.Cut(p[:at], "://")
				p = "xxxxx" + p[at:]
				if ok {
					p = scheme + "://" + p
				}
			}
			parts[i] = p
			continue
		}
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx")
			}
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
