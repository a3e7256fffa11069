package app

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Watch reports registry events to emit until ctx ends: first an
// EventAppeared (Initial) for every session live when it starts, then
// every change (domain.Tracker gives the rules), except that the gone of a
// live session whose record is missing while its process still runs waits
// ports.RewriteGrace for the record to come back (see holdMissing). It re-reads the registry
// whenever the folder watcher signals a change or the exit watcher sees a
// reported session's process end, or a grace ends; without those ports
// it re-reads every 500 ms. emit is called from Watch's goroutine, one event at a time.
//
// It returns nil when ctx ends, or the error of a registry read (an
// unreadable folder, of any harness: a watch never goes on silently
// without a harness's sessions; see unreadErr). Every goroutine it starts has returned by then.
func (s *Service) Watch(ctx context.Context, emit func(domain.Event)) error {
	return s.WatchNotes(ctx, emit, nil)
}

// MissingFolderNote is the note Watch gives (and list prints) when the
// registry folder does not exist: "registry folder <dir> does not exist;
// no sessions".
func MissingFolderNote(dir string) string {
	return "registry folder " + dir + " does not exist; no sessions"
}

// WatchNotes is Watch that also tells note (when not nil) what a person
// should know but is no event: once, at start, MissingFolderNote when the
// registry folder does not exist (the watch goes on and picks the folder
// up when it is created). note is called from Watch's goroutine.
func (s *Service) WatchNotes(ctx context.Context, emit func(domain.Event), note func(string)) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var changes <-chan struct{}
	defer func() {
		cancel()
		wg.Wait()
		if changes != nil {
			for range changes { // closed once the folder watch has ended
			}
		}
	}()

	l, err := s.Read(ctx)
	if err == nil {
		err = unreadErr(l)
	}
	if err != nil {
		return err
	}
	if l.Missing && note != nil {
		note(MissingFolderNote(l.Dir))
	}
	if s.folders != nil {
		changes = s.watchFolders(ctx, append([]string{l.Dir}, l.Also...))
	}
	var tick <-chan time.Time
	if changes == nil || s.exits == nil {
		t := time.NewTicker(resyncEvery)
		defer t.Stop()
		tick = t.C
	}

	// A process the exit watcher saw end counts as ended even while the
	// registry read still calls it alive (an unreaped zombie still answers
	// kill(pid, 0), and a liveness check may not see its state), and it
	// stays ended until its record goes or changes identity (file, session
	// id, pid or start time): it is reported died once, never appeared again.
	exited := make(chan struct{}, 1)
	var mu sync.Mutex
	ended := map[string]bool{}
	pids := map[string]context.CancelFunc{} // by record identity
	key := func(e domain.Entry) string {
		r := e.Record
		return r.Harness.String() + "\x00" + r.File + "\x00" + r.SessionID + "\x00" + strconv.Itoa(r.PID) + "\x00" + r.ProcStart + "\x00" + r.ProcStartFt
	}
	follow := func(live []domain.Entry) {
		keep := map[string]bool{}
		for _, e := range live {
			k := key(e)
			keep[k] = true
			if _, ok := pids[k]; ok || s.exits == nil {
				continue
			}
			pctx, pcancel := context.WithCancel(ctx)
			pids[k] = pcancel
			ch := s.exits.Exited(pctx, e.Record.PID, s.exitStart(e.Record))
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ch:
					mu.Lock()
					ended[k] = true
					mu.Unlock()
					select {
					case exited <- struct{}{}:
					default:
					}
				case <-pctx.Done():
				}
			}()
		}
		for k, cancel := range pids {
			if !keep[k] {
				cancel()
				delete(pids, k)
			}
		}
	}
	markEnded := func(entries []domain.Entry) []domain.Entry {
		mu.Lock()
		defer mu.Unlock()
		present := make(map[string]bool, len(entries))
		kept := entries[:0]
		for _, e := range entries {
			k := key(e)
			present[k] = true
			if e.Live() && ended[k] {
				if wentWithItsProcess(e.Record) {
					continue // removed before the exit, after it was read
				}
				// The exit watcher saw it end, yet the probe still found
				// the pid: it has exited and is not reaped yet (pidfd
				// fires before /proc shows state Z). Word it as list --all
				// words a zombie: domain.Classify's words, so that watch
				// and list agree whichever of the two looked first.
				e = domain.Classify(e.Record, domain.Liveness{Alive: domain.No, Zombie: true, Unchecked: e.Unchecked})
			}
			kept = append(kept, e)
		}
		for k := range ended {
			if !present[k] {
				delete(ended, k)
			}
		}
		return kept
	}

	var tr domain.Tracker
	// A live session whose record a read misses while its process still
	// runs (its exit not seen, its pid not gone) is held for
	// ports.RewriteGrace, the one bound for a record caught being
	// rewritten: its entry as last seen stands in for the record, so that
	// a record caught between a removal and its new copy is no gone and
	// appeared. Measured, no harness does that while it runs: Claude Code
	// 2.1.332 rewrites its record in place, Qwen Code 0.24.4 renames a new
	// copy over it (its writer unlinks and creates only when that rename
	// fails with EXDEV); both remove it only as they exit, so for them the
	// hold only waits for the exit that follows a clean stop's removal. A
	// record back within the grace (the same session and process) is no
	// event; one still missing when it ends is reported gone then. A
	// process that ends is reported at once, grace or not. held is by
	// record file; grace fires at the earliest end of a hold (graceAt).
	type hold struct {
		entry domain.Entry
		until time.Time
	}
	held := map[string]hold{}
	var grace <-chan time.Time
	var graceAt time.Time
	holdMissing := func(entries []domain.Entry) []domain.Entry {
		present := make(map[string]bool, len(entries))
		for _, e := range entries {
			present[e.Record.File] = true
		}
		now := s.now()
		var next time.Time
		for _, e := range tr.Live() {
			f := e.Record.File
			if present[f] {
				delete(held, f)
				continue
			}
			h, ok := held[f]
			if !ok {
				h = hold{entry: e, until: now.Add(ports.RewriteGrace)}
			}
			mu.Lock()
			exitSeen := ended[key(e)]
			mu.Unlock()
			if exitSeen || !now.Before(h.until) || s.processGone(e.Record) {
				delete(held, f) // gone now, as the tracker words it
				continue
			}
			held[f] = h
			entries = append(entries, h.entry)
			if next.IsZero() || h.until.Before(next) {
				next = h.until
			}
		}
		for f := range held {
			if present[f] {
				delete(held, f)
			}
		}
		switch {
		case next.IsZero():
			grace, graceAt = nil, time.Time{}
		case !next.Equal(graceAt):
			grace, graceAt = s.after(next.Sub(now)), next
		}
		return entries
	}
	for {
		l.Entries = markEnded(holdMissing(l.Entries))
		for _, ev := range tr.Update(l.Entries) {
			if ctx.Err() != nil {
				return nil
			}
			emit(ev)
		}
		follow(tr.Live())
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-changes:
			if !ok {
				changes = nil
			}
		case <-exited:
		case <-tick:
		case <-grace:
			grace, graceAt = nil, time.Time{}
		}
		if l, err = s.Read(ctx); err == nil {
			err = unreadErr(l)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// processGone says whether rec's process has ended or its pid is another
// process's now (the liveness check says so; unknown is not gone).
func (s *Service) processGone(rec domain.Record) bool {
	lv := s.live.Check(rec)
	return lv.Alive == domain.No || lv.StartMatches == domain.No
}

// unreadErr is the error of a Listing in which a harness's registry could
// not be read: "read registry <dir>: <err>" for the first, nil when every
// registry was read.
func unreadErr(l Listing) error {
	if len(l.Unread) == 0 {
		return nil
	}
	u := l.Unread[0]
	return fmt.Errorf("read registry %s (%s): %w", u.Dir, u.Harness, u.Err)
}
