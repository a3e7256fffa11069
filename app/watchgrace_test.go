package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// graceWorld is a watch over a registry and a liveness check the test
// sets, with its clock and timers in the test's hands.
type graceWorld struct {
	mu    sync.Mutex
	recs  []domain.Record
	dead  map[int]bool
	now   time.Time
	armed chan armedTimer
	// missed hears each read that found no record.
	missed chan struct{}
}

// armedTimer is one timer the watch armed: after d, the test sends on fire.
type armedTimer struct {
	d    time.Duration
	fire chan time.Time
}

func (g *graceWorld) Read(context.Context) (ports.Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.recs) == 0 {
		select {
		case g.missed <- struct{}{}:
		default:
		}
	}
	return ports.Snapshot{Dir: "/cfg/sessions", Records: append([]domain.Record(nil), g.recs...)}, nil
}

func (g *graceWorld) Check(r domain.Record) domain.Liveness {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead[r.PID] {
		return domain.Liveness{Alive: domain.No}
	}
	return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
}

func (g *graceWorld) set(recs ...domain.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recs = recs
}

func (g *graceWorld) kill(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead[pid] = true
}

func (g *graceWorld) clock() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

func (g *graceWorld) advance(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = g.now.Add(d)
}

func (g *graceWorld) after(d time.Duration) <-chan time.Time {
	fire := make(chan time.Time, 1)
	g.armed <- armedTimer{d: d, fire: fire}
	return fire
}

// missing empties the registry and returns once a read found it so.
func (g *graceWorld) missing(t *testing.T) {
	t.Helper()
	g.set()
	select {
	case <-g.missed:
	default:
	}
	select {
	case <-g.missed:
	case <-time.After(within):
		t.Fatalf("no read within %s of the record's removal", within)
	}
}

// nextTimer is the next timer the watch arms.
func (g *graceWorld) nextTimer(t *testing.T, cue string) armedTimer {
	t.Helper()
	select {
	case a := <-g.armed:
		return a
	case <-time.After(within):
		t.Fatalf("no grace armed within %s after %s", within, cue)
		return armedTimer{}
	}
}

// startGrace watches one live session, pid 4652, idle; it returns the
// world, the events and the record.
func startGrace(t *testing.T) (*graceWorld, <-chan domain.Event, domain.Record) {
	g := &graceWorld{dead: map[int]bool{}, now: time.Date(2026, 12, 7, 3, 50, 15, 0, time.UTC), armed: make(chan armedTimer, 16), missed: make(chan struct{}, 1)}
	rec := record(4652, idA, "docs-0c")
	rec.Status, rec.StatusUpdatedAt = domain.StatusIdle, g.now.Add(-time.Minute)
	g.set(rec)
	svc := app.New(g, g, nil, "", app.WithClock(g.clock), app.WithTimer(g.after))
	events := startWatching(t, svc).events
	ev := nextEvent(t, events, "start")
	require.Equal(t, domain.EventAppeared, ev.Kind)
	return g, events, rec
}

// A live session's record missing from a read and back by the next while
// its process runs (caught in the middle of a rewrite) is no gone and no
// appeared: the gone waits ports.RewriteGrace, the one bound for a record
// caught being rewritten, and a change since is reported as usual.
func TestWatchHoldsAMissingRecordWhileItsProcessRuns(t *testing.T) {
	g, events, rec := startGrace(t)

	g.missing(t) // pid 4652 still runs
	busy := rec
	busy.Name, busy.Status, busy.StatusUpdatedAt = "docs-writer", domain.StatusBusy, g.clock()
	g.set(busy) // back, renamed and busy
	ev := nextEvent(t, events, "the record came back")
	require.Equal(t, domain.EventRenamed, ev.Kind, "a record back within the grace is the same session: no gone")
	assert.Equal(t, "docs-writer", ev.Entry.Record.Name)
	ev = nextEvent(t, events, "the record came back")
	require.Equal(t, domain.EventStatus, ev.Kind)
	assert.Equal(t, domain.StatusBusy, ev.Entry.Record.Status)
	timer := g.nextTimer(t, "the record went")
	assert.Equal(t, ports.RewriteGrace, timer.d, "Claude Code and Qwen Code never remove their records while they run: the hold is the rewrite grace")

	// The grace's end finds it there: still nothing but what changes.
	g.advance(ports.RewriteGrace)
	timer.fire <- g.clock()
	idle := busy
	idle.Status, idle.StatusUpdatedAt = domain.StatusIdle, g.clock()
	g.set(idle)
	ev = nextEvent(t, events, "status idle")
	require.Equal(t, domain.EventStatus, ev.Kind, "no gone after the grace ends with the record back")
	assert.Equal(t, domain.StatusIdle, ev.Entry.Record.Status)
}

// A record still missing when the grace ends is reported gone then, with
// the usual words.
func TestWatchReportsGoneWhenTheGraceEnds(t *testing.T) {
	g, events, _ := startGrace(t)

	g.set()
	timer := g.nextTimer(t, "the record went")
	g.advance(timer.d)
	timer.fire <- g.clock()
	ev := nextEvent(t, events, "the grace ended")
	require.Equal(t, domain.EventGone, ev.Kind)
	assert.Equal(t, 4652, ev.Entry.Record.PID)
	assert.Equal(t, domain.VerdictRemoved, ev.Entry.Verdict)
	assert.Equal(t, "record 4652.json was removed; last seen live", ev.Entry.Reason)
}

// A process that ends while its record is held is reported gone at once,
// without waiting for the grace; one already gone is never held.
func TestWatchReportsGoneAtOnceWhenTheProcessEnds(t *testing.T) {
	t.Run("during the grace", func(t *testing.T) {
		g, events, _ := startGrace(t)
		g.set()
		g.nextTimer(t, "the record went")
		g.kill(4652)
		ev := nextEvent(t, events, "the process ended")
		require.Equal(t, domain.EventGone, ev.Kind)
		assert.Equal(t, "record 4652.json was removed; last seen live", ev.Entry.Reason)
	})
	t.Run("before the read", func(t *testing.T) {
		g, events, _ := startGrace(t)
		g.kill(4652)
		g.missing(t)
		ev := nextEvent(t, events, "a clean exit")
		require.Equal(t, domain.EventGone, ev.Kind)
		assert.Empty(t, g.armed, "a session whose process ended is not held")
	})
}
