package serve

import (
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports"
)

// heldEvery is how often a held message's transcript is looked at for its
// release (heldFollow).
const heldEvery = 5 * time.Second

// heldFollow looks, beside the loop and one look at a time, whether the
// held messages of this machine (a session held them: a delivery notice
// said so) were released since (app.Outbox.Released): each at most once
// per heldEvery, until its expiry; one released is delivered, and logged.
// A look counts as no request: the service still ends when idle.
type heldFollow struct {
	running atomic.Bool
	// looked is when each held message was last looked at (loop only).
	looked map[int64]time.Time
}

// followHeld starts a look at the held messages due one, unless one runs.
func (s *Server) followHeld(now time.Time) {
	if s.store == nil || !s.releases.running.CompareAndSwap(false, true) {
		return
	}
	held, err := s.store.List(s.life, ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxHeld}})
	if s.releases.looked == nil {
		s.releases.looked = map[int64]time.Time{}
	}
	var due []ports.OutboxMessage
	for _, m := range held {
		if err != nil || m.Host != "" || m.Transcript == "" || !now.Before(m.Expires) || now.Sub(s.releases.looked[m.ID]) < heldEvery {
			continue
		}
		s.releases.looked[m.ID] = now
		due = append(due, m)
	}
	if len(due) == 0 {
		s.releases.running.Store(false)
		return
	}
	s.jobs.Add(1)
	go func() {
		defer s.jobs.Done()
		defer s.releases.running.Store(false)
		for _, m := range due {
			if s.life.Err() != nil {
				return
			}
			s.lookHeld(m)
		}
	}()
}

// lookHeld looks once whether held message m was released, with a
// Service of its stored order's settings (its transcripts reader).
func (s *Server) lookHeld(m ports.OutboxMessage) {
	o, err := loadOrder(m)
	if err != nil {
		return
	}
	var svc *app.Service
	cfg := app.Config{Flags: o.Settings.Flags, Getenv: s.harnessEnv, Env: s.o.Environ()}
	if err := fx.New(wiring.Module, fx.Supply(cfg), fx.Populate(&svc), fx.NopLogger).Err(); err != nil {
		return
	}
	done, released, err := s.ob.Released(s.life, svc, m)
	switch {
	case released:
		s.logMessage(m, done.State, done.Reason)
	case err != nil && s.life.Err() == nil:
		fmt.Fprintf(s.o.Log, "peerctl serve: message %d: look for its release: %v\n", m.ID, err)
	}
}
