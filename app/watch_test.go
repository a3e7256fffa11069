package app_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// nextEvent returns the next event, failing the test after within.
func nextEvent(t *testing.T, ch <-chan domain.Event, cue string) domain.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "events closed while waiting after %s", cue)
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %s after %s", within, cue)
		return domain.Event{}
	}
}

// noEvent checks nothing more is reported for a moment.
func noEvent(t *testing.T, ch <-chan domain.Event, after string) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected %s event for pid %d after %s", ev.Kind, ev.Entry.Record.PID, after)
	case <-time.After(200 * time.Millisecond):
	}
}

// watching is a svc.Watch running in the background for one test.
type watching struct {
	events chan domain.Event
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startWatching runs svc.Watch until stop or the end of the test.
func startWatching(t *testing.T, svc *app.Service) *watching {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{events: make(chan domain.Event, 16), cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- svc.Watch(ctx, func(e domain.Event) { w.events <- e }) }()
	t.Cleanup(func() { _ = w.stop(t) })
	return w
}

// stop ends the watch and returns what Watch returned; Watch must return
// within the bound after its context ends.
func (w *watching) stop(t *testing.T) error {
	w.once.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(within):
			t.Error("Watch did not return after its context ended")
		}
	})
	return w.err
}

func TestWatchEvents(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			a := startFake(t, cfg, idA, "proj-89")
			svc := newService(cfg, nil, v)
			w := startWatching(t, svc)
			events := w.events

			ev := nextEvent(t, events, "start")
			assert.Equal(t, domain.EventAppeared, ev.Kind)
			assert.True(t, ev.Initial)
			assert.Equal(t, a.PID(), ev.Entry.Record.PID)
			assert.Equal(t, "cc-peer:v1:", ev.Entry.Endpoint().String()[:11])
			noEvent(t, events, "start")

			b := startFake(t, cfg, idB, "api-3c")
			ev = nextEvent(t, events, "a second session started")
			assert.Equal(t, domain.EventAppeared, ev.Kind)
			assert.False(t, ev.Initial)
			assert.Equal(t, b.PID(), ev.Entry.Record.PID)
			assert.Equal(t, idB, ev.Entry.Record.SessionID)

			b.setStatus("busy")
			ev = nextEvent(t, events, "status busy")
			assert.Equal(t, domain.EventStatus, ev.Kind)
			assert.Equal(t, b.PID(), ev.Entry.Record.PID)
			assert.Equal(t, domain.StatusIdle, ev.PrevStatus)
			assert.Equal(t, domain.StatusBusy, ev.Entry.Record.Status)

			b.rename("api: review")
			ev = nextEvent(t, events, "rename")
			assert.Equal(t, domain.EventRenamed, ev.Kind)
			assert.Equal(t, "api-3c", ev.PrevName)
			assert.Equal(t, "api: review", ev.Entry.Record.Name)

			// A crash changes no file: only the process's end can tell.
			b.crash()
			ev = nextEvent(t, events, "crash")
			assert.Equal(t, domain.EventDied, ev.Kind)
			assert.Equal(t, b.PID(), ev.Entry.Record.PID)
			assert.Equal(t, domain.VerdictStale, ev.Entry.Verdict)
			noEvent(t, events, "crash")

			// Someone cleans the stale record up.
			require.NoError(t, os.Remove(b.path()))
			ev = nextEvent(t, events, "stale record removed")
			assert.Equal(t, domain.EventGone, ev.Kind)
			assert.Equal(t, b.PID(), ev.Entry.Record.PID)

			a.exit()
			ev = nextEvent(t, events, "clean exit")
			assert.Equal(t, domain.EventGone, ev.Kind)
			assert.Equal(t, a.PID(), ev.Entry.Record.PID)
			noEvent(t, events, "clean exit")

			require.NoError(t, w.stop(t))
		})
	}
}

func TestWatchStartsBeforeTheRegistryExists(t *testing.T) {
	cfg := t.TempDir()
	svc := newService(cfg, nil, variants()[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan domain.Event, 4)
	notes := make(chan string, 4)
	go func() {
		_ = svc.WatchNotes(ctx, func(e domain.Event) { events <- e }, func(n string) { notes <- n })
	}()
	select {
	case n := <-notes:
		// The note list prints, once.
		assert.Equal(t, "registry folder "+fsregistry.SessionsDir(cfg)+" does not exist; no sessions", n)
	case <-time.After(within):
		t.Fatal("no note about the missing registry folder")
	}
	a := startFake(t, cfg, idA, "first") // creates <cfg>/sessions
	ev := nextEvent(t, events, "first session in a new folder")
	assert.Equal(t, domain.EventAppeared, ev.Kind)
	assert.Equal(t, a.PID(), ev.Entry.Record.PID)
	assert.Empty(t, notes, "the note is given once")
}

// A process that has exited but is not reaped yet (a zombie) is stale in
// list and died in watch, with the same words (domain.Classify's).
func TestWatchAndListAgreeOnAZombie(t *testing.T) {
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cfg := t.TempDir()
			a := startFake(t, cfg, idA, "proj-89")
			svc := newService(cfg, nil, v)
			events := startWatching(t, svc).events
			require.Equal(t, domain.EventAppeared, nextEvent(t, events, "start").Kind)

			a.zombie()
			ev := nextEvent(t, events, "the process exited, unreaped")
			assert.Equal(t, domain.EventDied, ev.Kind)
			l, err := svc.List(context.Background(), true)
			require.NoError(t, err)
			require.Len(t, l.Entries, 1)
			listed := l.Entries[0]
			assert.Equal(t, domain.VerdictStale, listed.Verdict, "list: %s", listed.Reason)
			assert.Equal(t, listed.Verdict, ev.Entry.Verdict)
			assert.Equal(t, listed.Reason, ev.Entry.Reason, "watch and list word the same record alike")
			assert.Contains(t, listed.Reason, "has exited (zombie, not yet reaped)")
		})
	}
}

func TestWatchUnreadableRegistryFails(t *testing.T) {
	cfg := t.TempDir()
	require.NoError(t, os.WriteFile(fsregistry.SessionsDir(cfg), []byte("a file, not a folder"), 0o600))
	svc := newService(cfg, nil, variants()[0])
	err := svc.Watch(context.Background(), func(domain.Event) { t.Error("no event expected") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read registry")
}

// TestLocalNodeWatch: this machine's node watches on the whole graph's
// Service: every live session first (initial), a crash as died, each as
// its document; the watch ends when events says stop, returning nil and
// leaving no goroutine behind.
func TestLocalNodeWatch(t *testing.T) {
	cfg := t.TempDir()
	a := startFake(t, cfg, idA, "proj-89")
	before := goroutines()

	var svc *app.Service
	fxtest.New(t, wiring.Module, fx.Supply(testConfig(cfg, socketframe.Name)), fx.Populate(&svc))
	n := app.LocalNode{Watching: func() (*app.Service, error) { return svc, nil }}
	events := make(chan wire.Event)
	done := make(chan error, 1)
	go func() {
		done <- n.Watch(context.Background(), func(ev wire.Event) bool {
			events <- ev
			return ev.Event != domain.EventDied.String()
		}, nil)
	}()
	next := func(what string) wire.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(within):
			t.Fatalf("no event after %s", what)
		}
		return wire.Event{}
	}
	ev := next("start")
	assert.Equal(t, "appeared", ev.Event)
	assert.True(t, ev.Initial)
	assert.Equal(t, a.PID(), ev.PID)
	assert.Empty(t, ev.Host, "this machine's events name no host")

	a.crash()
	ev = next("crash")
	// Any other event leaves the watch handing over the next one to a
	// test that no longer reads: stop here.
	require.Equal(t, "died", ev.Event, "%+v", ev)
	select {
	case err := <-done:
		assert.NoError(t, err, "a watch its reader stopped ends cleanly")
	case <-time.After(within):
		t.Fatal("the watch did not end when events said stop")
	}
	// Counted here, not in assert.Eventually (whose condition runs in a
	// goroutine of its own).
	for deadline := time.Now().Add(within); goroutines() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, now:\n%s", before, buf[:runtime.Stack(buf, true)])
		}
	}
}

func TestStartingTheGraphStartsNoWatch(t *testing.T) {
	cfg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "sessions"), 0o700))
	var svc *app.Service
	fxApp := fxtest.New(t, wiring.Module, fx.Supply(testConfig(cfg, socketframe.Name)), fx.Populate(&svc))
	before := goroutines()
	fxApp.RequireStart()
	assert.LessOrEqual(t, goroutines(), before, "starting the graph starts no watch")
	fxApp.RequireStop()
}

// goroutines counts the program's goroutines as a full stack dump lists
// them (runtime.NumGoroutine also counts the runtime's lazily started
// helpers, such as the cleanup goroutine).
func goroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "\ngoroutine ") + 1
}

// blindLiveness sees every process as alive and started as recorded, as a
// liveness check that cannot read a process's state would.
type blindLiveness struct{}

func (blindLiveness) Check(domain.Record) domain.Liveness {
	return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
}

// A process the exit watcher saw end stays ended while its record stays:
// registry changes do not bring a zombie back as appeared, even when the
// liveness check still calls it alive.
func TestWatchZombieDiesOnceWhenLivenessCannotTell(t *testing.T) {
	cfg := t.TempDir()
	a := startFake(t, cfg, idA, "proj-89")
	svc := app.New(fsregistry.New(fsregistry.SessionsDir(cfg)), blindLiveness{}, nil, cfg, app.WithExitWatcher(newExits()))
	events := startWatching(t, svc).events
	require.Equal(t, domain.EventAppeared, nextEvent(t, events, "start").Kind)
	a.zombie()
	require.Equal(t, domain.EventDied, nextEvent(t, events, "the zombie").Kind)
	for i := range 10 {
		require.NoError(t, os.WriteFile(filepath.Join(fsregistry.SessionsDir(cfg), "other.txt"), []byte{byte(i)}, 0o600))
		select {
		case ev := <-events:
			t.Fatalf("%s after registry change %d: a zombie is reported once", ev.Kind, i)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
