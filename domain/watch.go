package domain

import (
	"fmt"
	"sort"
)

// EventKind is the closed set of registry events `peerctl watch` reports.
type EventKind int

// The event kinds. Their words never change.
const (
	EventUnknown EventKind = iota
	// EventAppeared: a live session this watch had not reported.
	EventAppeared
	// EventGone: the record of a reported session was removed (a clean
	// exit removes it; so does someone cleaning up after a crash). The
	// Tracker reports it at the first read without the record; app's
	// watch holds it for a while when the process still runs.
	EventGone
	// EventDied: a reported session's process ended but its record is
	// still there (a crash, SIGKILL); or its pid now belongs to another
	// process (reused).
	EventDied
	// EventStatus: a live session's status changed (idle, busy, waiting,
	// unknown), or what a waiting one waits on; one event per change
	// StatusesBetween finds between two reads.
	EventStatus
	// EventRenamed: a live session's name changed.
	EventRenamed
)

var eventWords = []string{"unknown", "appeared", "gone", "died", "status", "renamed"}

// String returns the stable word, e.g. "appeared".
func (k EventKind) String() string {
	if int(k) >= 0 && int(k) < len(eventWords) {
		return eventWords[k]
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// EventKinds lists every kind in a stable order.
func EventKinds() []EventKind {
	return []EventKind{EventAppeared, EventGone, EventDied, EventStatus, EventRenamed}
}

// Event is one change between two registry reads.
type Event struct {
	Kind EventKind
	// Entry is the session as last read; for EventGone, as last seen
	// before its record went away, with the verdict VerdictRemoved (a
	// record that is gone is not live) and a reason giving the verdict it
	// last had.
	Entry Entry
	// PrevName is the name before an EventRenamed.
	PrevName string
	// PrevStatus is the status before an EventStatus.
	PrevStatus Status
	// Initial marks the EventAppeared events of the first read: sessions
	// that were already live when the watch began.
	Initial bool
}

// Tracker turns successive registry reads into events. It remembers the
// sessions it has reported, keyed by record file: live ones, and dead ones
// whose record stayed behind. Entries with a file problem (malformed, torn
// mid-write, unreadable) change nothing: the previous state stands until
// the file reads cleanly or disappears. The zero Tracker is ready; it is
// not safe for concurrent use.
type Tracker struct {
	seen    map[string]tracked
	started bool
}

type tracked struct {
	entry Entry
	dead  bool
}

// Update takes the entries of one full registry read and returns the
// events since the previous one, ordered by pid then file. A session whose
// record file now holds another session id (or pid) is reported gone, and
// the new one appeared.
func (t *Tracker) Update(entries []Entry) []Event {
	if t.seen == nil {
		t.seen = map[string]tracked{}
	}
	initial := !t.started
	t.started = true
	var out []Event
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		key := e.Record.File
		present[key] = true
		if e.Record.Problem != "" {
			continue
		}
		prev, known := t.seen[key]
		if known && (prev.entry.Record.SessionID != e.Record.SessionID || prev.entry.Record.PID != e.Record.PID) {
			out = append(out, gone(prev.entry, "holds another session now"))
			delete(t.seen, key)
			known = false
		}
		switch {
		case !known && e.Live():
			out = append(out, Event{Kind: EventAppeared, Entry: e, Initial: initial})
			t.seen[key] = tracked{entry: e}
		case !known:
			// A dead or foreign record this watch never saw live: not a session.
		case prev.dead && e.Live():
			// Same pid and session id back to live: a liveness check that
			// could not decide before. Report it as appearing again.
			out = append(out, Event{Kind: EventAppeared, Entry: e})
			t.seen[key] = tracked{entry: e}
		case prev.dead:
			t.seen[key] = tracked{entry: e, dead: true}
		case !e.Live():
			out = append(out, Event{Kind: EventDied, Entry: e})
			t.seen[key] = tracked{entry: e, dead: true}
		default:
			if prev.entry.Record.Name != e.Record.Name {
				out = append(out, Event{Kind: EventRenamed, Entry: e, PrevName: prev.entry.Record.Name})
			}
			was := prev.entry.Record.Status
			for _, st := range StatusesBetween(prev.entry.Record, e.Record) {
				ev := Event{Kind: EventStatus, Entry: e, PrevStatus: was}
				ev.Entry.Record.Status = st // a status passed through between reads: the rest as read now
				out = append(out, ev)
				was = st
			}
			t.seen[key] = tracked{entry: e}
		}
	}
	for key, prev := range t.seen {
		if !present[key] {
			out = append(out, gone(prev.entry, "was removed"))
			delete(t.seen, key)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Entry.Record, out[j].Entry.Record
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.File < b.File
	})
	return out
}

// gone is the EventGone of last, the entry last seen: its verdict is
// VerdictRemoved, its reason says what happened to the record and the
// verdict it last had ("record 4652.json was removed; last seen live").
func gone(last Entry, what string) Event {
	e := last
	e.Verdict = VerdictRemoved
	e.Reason = fmt.Sprintf("record %s %s; last seen %s", last.Record.File, what, last.Verdict)
	if last.Reason != "" {
		e.Reason += " (" + last.Reason + ")"
	}
	return Event{Kind: EventGone, Entry: e}
}

// Live returns the entries the tracker holds as live, ordered by pid then file.
func (t *Tracker) Live() []Entry {
	var out []Entry
	for _, s := range t.seen {
		if !s.dead {
			out = append(out, s.entry)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Record.PID != out[j].Record.PID {
			return out[i].Record.PID < out[j].Record.PID
		}
		return out[i].Record.File < out[j].Record.File
	})
	return out
}
