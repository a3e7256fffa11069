package domain

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func entry(pid int, id, name string, st Status, v Verdict) Entry {
	return Entry{Record: Record{File: strconv.Itoa(pid) + ".json", PID: pid, SessionID: id, Name: name, Status: st}, Verdict: v}
}

func kinds(evs []Event) []string {
	out := []string{}
	for _, e := range evs {
		s := e.Kind.String() + ":" + strconv.Itoa(e.Entry.Record.PID)
		if e.Initial {
			s += ":initial"
		}
		out = append(out, s)
	}
	return out
}

func TestTrackerSequences(t *testing.T) {
	live := func(pid int, id, name string, st Status) Entry { return entry(pid, id, name, st, VerdictLive) }
	torn := Entry{Record: Record{File: "10.json", Problem: "not a JSON record"}, Verdict: VerdictMalformed}
	cases := []struct {
		name  string
		reads [][]Entry
		want  [][]string
	}{
		{"first read reports live sessions as initial, never the dead",
			[][]Entry{{live(10, "a", "x", StatusIdle), entry(11, "b", "y", StatusIdle, VerdictStale), entry(12, "c", "z", StatusIdle, VerdictHeadless)}},
			[][]string{{"appeared:10:initial"}}},
		{"appear, status, rename, died, then the stale record removed",
			[][]Entry{{}, {live(10, "a", "x", StatusUnknown)}, {live(10, "a", "x", StatusIdle)}, {live(10, "a", "y", StatusBusy)},
				{entry(10, "a", "y", StatusBusy, VerdictStale)}, {entry(10, "a", "y", StatusBusy, VerdictStale)}, {}},
			[][]string{{}, {"appeared:10"}, {"status:10"}, {"renamed:10", "status:10"}, {"died:10"}, {}, {"gone:10"}}},
		{"clean exit", [][]Entry{{live(10, "a", "x", StatusIdle)}, {}}, [][]string{{"appeared:10:initial"}, {"gone:10"}}},
		{"pid reused counts as died", [][]Entry{{live(10, "a", "x", StatusIdle)}, {entry(10, "a", "x", StatusIdle, VerdictReused)}},
			[][]string{{"appeared:10:initial"}, {"died:10"}}},
		{"a torn read changes nothing", [][]Entry{{live(10, "a", "x", StatusIdle)}, {torn}, {live(10, "a", "x", StatusIdle)}},
			[][]string{{"appeared:10:initial"}, {}, {}}},
		{"new session id in the same file: gone then appeared", [][]Entry{{live(10, "a", "x", StatusIdle)}, {live(10, "b", "x", StatusIdle)}},
			[][]string{{"appeared:10:initial"}, {"gone:10", "appeared:10"}}},
		{"a stale record that was never live stays silent", [][]Entry{{}, {entry(11, "b", "y", StatusIdle, VerdictStale)}, {}},
			[][]string{{}, {}, {}}},
		{"events ordered by pid", [][]Entry{{}, {live(30, "c", "z", StatusIdle), live(10, "a", "x", StatusIdle)}},
			[][]string{{}, {"appeared:10", "appeared:30"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tracker
			for i, read := range tc.reads {
				assert.Equal(t, tc.want[i], kinds(tr.Update(read)), "read %d", i)
			}
		})
	}
}

func TestTrackerEventDetails(t *testing.T) {
	var tr Tracker
	tr.Update([]Entry{entry(10, "a", "old", StatusIdle, VerdictLive)})
	evs := tr.Update([]Entry{entry(10, "a", "new", StatusBusy, VerdictLive)})
	if assert.Len(t, evs, 2) {
		assert.Equal(t, "old", evs[0].PrevName)
		assert.Equal(t, StatusIdle, evs[1].PrevStatus)
		assert.Equal(t, StatusBusy, evs[1].Entry.Record.Status)
	}
	assert.Len(t, tr.Live(), 1)
	evs = tr.Update(nil)
	if assert.Len(t, evs, 1) {
		assert.Equal(t, "new", evs[0].Entry.Record.Name, "gone carries the entry as last seen")
		assert.Equal(t, VerdictRemoved, evs[0].Entry.Verdict, "a removed record is not live")
		assert.Equal(t, "removed", evs[0].Entry.Verdict.String())
		assert.Equal(t, "record 10.json was removed; last seen live", evs[0].Entry.Reason)
	}
	assert.Empty(t, tr.Live())

	// Gone after died: the reason keeps the last verdict and its reason.
	tr.Update([]Entry{entry(11, "b", "x", StatusIdle, VerdictLive)})
	dead := entry(11, "b", "x", StatusIdle, VerdictStale)
	dead.Reason = "pid 11 is not running"
	tr.Update([]Entry{dead})
	evs = tr.Update(nil)
	if assert.Len(t, evs, 1) {
		assert.Equal(t, VerdictRemoved, evs[0].Entry.Verdict)
		assert.Equal(t, "record 11.json was removed; last seen stale (pid 11 is not running)", evs[0].Entry.Reason)
	}

	// A record file that now holds another session: the old one is gone.
	tr.Update([]Entry{entry(12, "c", "y", StatusIdle, VerdictLive)})
	evs = tr.Update([]Entry{entry(12, "d", "y", StatusIdle, VerdictLive)})
	if assert.Len(t, evs, 2) {
		assert.Equal(t, EventGone, evs[0].Kind)
		assert.Equal(t, VerdictRemoved, evs[0].Entry.Verdict)
		assert.Equal(t, "record 12.json holds another session now; last seen live", evs[0].Entry.Reason)
		assert.Equal(t, EventAppeared, evs[1].Kind)
	}
}

func TestClosedSetWords(t *testing.T) {
	assert.Equal(t, []string{"appeared", "gone", "died", "status", "renamed"}, func() []string {
		var out []string
		for _, k := range EventKinds() {
			out = append(out, k.String())
		}
		return out
	}())
	for _, o := range []Outcome{OutcomePosted, OutcomeQueued, OutcomeHeld, OutcomeRefused, OutcomeDelivered} {
		assert.Equal(t, o, ParseOutcome(o.String()))
	}
	assert.Equal(t, OutcomeUnknown, ParseOutcome("planned"))
	assert.Equal(t, []string{"idle", "exited", "timeout", "interrupted", "failed"},
		[]string{WaitIdle.String(), WaitExited.String(), WaitTimeout.String(), WaitInterrupted.String(), WaitFailed.String()})
}

func TestEnqueuedAfter(t *testing.T) {
	since := time.Date(2026, 11, 30, 8, 56, 53, 642_700_000, time.UTC)
	cases := []struct {
		at   time.Time
		want bool
	}{
		{since.Truncate(time.Millisecond), true}, // same millisecond as the send
		{since.Add(time.Millisecond), true},
		{since.Truncate(time.Millisecond).Add(-time.Millisecond), false},
		{since.Add(-time.Hour), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, EnqueuedAfter(c.at, since), "at %s", c.at)
	}
}

// Two watchers that read the same record at different moments report the
// same status changes: a turn that began and ended between two reads shows
// in the record's statusUpdatedAt, so the reader that missed the busy
// rewrite still reports busy then idle. A rewrite that changes only
// updatedAt (a rename) or a record without statusUpdatedAt adds nothing.
func TestTrackersAgreeWhateverTheyCaught(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(1796172100000 + ms) }
	rec := func(st Status, statusMs, updatedMs int64, name string) Entry {
		e := entry(10, "a", name, st, VerdictLive)
		e.Record.StatusUpdatedAt, e.Record.UpdatedAt = at(statusMs), at(updatedMs)
		return e
	}
	history := []Entry{
		rec(StatusIdle, 0, 0, "x"),
		rec(StatusBusy, 100, 100, "x"),
		rec(StatusIdle, 200, 200, "x"),
		rec(StatusBusy, 300, 300, "x"),
		rec(StatusIdle, 400, 400, "x"),
		rec(StatusIdle, 400, 500, "y"), // renamed: updatedAt only
	}
	statuses := func(reads ...int) []string {
		var tr Tracker
		var out []string
		for _, i := range reads {
			for _, ev := range tr.Update([]Entry{history[i]}) {
				switch ev.Kind {
				case EventStatus:
					out = append(out, ev.PrevStatus.String()+">"+ev.Entry.Record.Status.String())
				case EventRenamed:
					out = append(out, "renamed")
				}
			}
		}
		return out
	}
	want := []string{"idle>busy", "busy>idle", "idle>busy", "busy>idle", "renamed"}
	assert.Equal(t, want, statuses(0, 1, 2, 3, 4, 5), "every rewrite caught")
	assert.Equal(t, want, statuses(0, 2, 4, 5), "the busy rewrites missed")
	assert.Equal(t, want, statuses(0, 1, 2, 4, 5), "one busy missed")
	assert.ElementsMatch(t, want, statuses(0, 2, 5), "the busy rewrites missed, two turns and a rename read together")

	var tr Tracker
	plain := entry(11, "b", "q", StatusIdle, VerdictLive) // no statusUpdatedAt (Qwen Code)
	tr.Update([]Entry{plain})
	plain.Record.UpdatedAt = at(900)
	assert.Empty(t, tr.Update([]Entry{plain}), "without statusUpdatedAt only a new word is a change")
}

// A session that stays waiting but waits on something else (its dialog
// closed and a permission prompt opened) is a status event: waiting,
// with the new waitingFor; the same waitingFor read again is none.
func TestTrackerWaitingForChange(t *testing.T) {
	waiting := func(on string) Entry {
		e := entry(10, "a", "x", StatusWaiting, VerdictLive)
		e.Record.WaitingFor = on
		return e
	}
	var tr Tracker
	tr.Update([]Entry{waiting("dialog open")})
	evs := tr.Update([]Entry{waiting("permission prompt")})
	if assert.Equal(t, []string{"status:10"}, kinds(evs)) {
		assert.Equal(t, StatusWaiting, evs[0].PrevStatus)
		assert.Equal(t, StatusWaiting, evs[0].Entry.Record.Status)
		assert.Equal(t, "permission prompt", evs[0].Entry.Record.WaitingFor)
	}
	assert.Empty(t, tr.Update([]Entry{waiting("permission prompt")}))
}
