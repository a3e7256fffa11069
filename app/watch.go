package app

import (
	"context"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Watch reports registry events to emit until ctx ends: first an
// EventAppeared (Initial) for every session live when it starts, then
// every change (domain.Tracker gives the rules). It re-reads the registry
// whenever the folder watcher signals a change or the exit watcher sees a
// reported session's process end; without those ports it re-reads every
// 500 ms. emit is called from Watch's goroutine, one event at a time.
//
// It returns nil when ctx ends, or the error of a registry read (an
// unreadable folder). Every goroutine it starts has returned by then.
func (s *Service) Watch(ctx context.Context, emit func(domain.Event)) error {
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
	if err != nil {
		return err
	}
	if s.folders != nil {
		if ch, err := s.folders.Watch(ctx, l.Dir); err == nil {
			changes = ch
		}
	}
	var tick <-chan time.Time
	if changes == nil || s.exits == nil {
		t := time.NewTicker(resyncEvery)
		defer t.Stop()
		tick = t.C
	}

	exited := make(chan struct{}, 1)
	type pidWatch struct {
		cancel context.CancelFunc
	}
	pids := map[string]pidWatch{} // by record file
	follow := func(live []domain.Entry) {
		keep := map[string]bool{}
		for _, e := range live {
			key := e.Record.File + "\x00" + e.Record.SessionID
			keep[key] = true
			if _, ok := pids[key]; ok || s.exits == nil {
				continue
			}
			pctx, pcancel := context.WithCancel(ctx)
			pids[key] = pidWatch{cancel: pcancel}
			ch := s.exits.Exited(pctx, e.Record.PID, e.Record.ProcStart)
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ch:
					select {
					case exited <- struct{}{}:
					default:
					}
				case <-pctx.Done():
				}
			}()
		}
		for key, w := range pids {
			if !keep[key] {
				w.cancel()
				delete(pids, key)
			}
		}
	}

	var tr domain.Tracker
	for {
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
		case <-changes:
		case <-exited:
		case <-tick:
		}
		if l, err = s.Read(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
