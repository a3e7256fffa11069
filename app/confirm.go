package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Option adds an optional port to a Service built with New.
type Option func(*Service)

// WithTranscripts lets Send confirm deliveries from the target's transcript.
func WithTranscripts(t ports.Transcripts) Option { return func(s *Service) { s.transcripts = t } }

// WithFolderWatcher lets Watch and Send's wait notice registry changes
// without polling the folder.
func WithFolderWatcher(w ports.FolderWatcher) Option { return func(s *Service) { s.folders = w } }

// WithExitWatcher lets Watch and Send's wait notice a session's process
// end (a crash leaves its record behind) without polling its pid.
func WithExitWatcher(w ports.ExitWatcher) Option { return func(s *Service) { s.exits = w } }

// DefaultConfirmTimeout bounds confirmation when ConfirmOptions.ConfirmTimeout is 0.
const DefaultConfirmTimeout = 5 * time.Second

// resyncEvery is how often Watch and the wait re-read the registry when a
// watcher port is missing (the polling fallback).
const resyncEvery = 500 * time.Millisecond

// ConfirmOptions shape what Send does after the transport succeeded.
type ConfirmOptions struct {
	// NoConfirm skips reading the target's transcript: the outcome is the
	// transport's own word ("posted" or "sent").
	NoConfirm bool
	// ConfirmTimeout bounds the wait for the enqueue line (0:
	// DefaultConfirmTimeout).
	ConfirmTimeout time.Duration
	// RequireConfirm turns "not confirmed" into a ReasonDeliveryFailed
	// refusal (the text may still arrive: the transport accepted it).
	RequireConfirm bool
	// Wait, when positive, follows the target's registry status after
	// delivery until it has gone busy and back to idle, the session ends,
	// or Wait passes (see Confirmation.WaitEnd).
	Wait time.Duration
}

// Confirmation is what Send learned after the transport succeeded.
type Confirmation struct {
	// Outcome is OutcomeDelivered when confirmed, else the transport's
	// word: OutcomePosted (socket) or OutcomeSent (courier).
	Outcome domain.Outcome
	// Confirmed is true when the target's transcript shows the text.
	Confirmed bool
	// Transcript is the file read ("" when unknown).
	Transcript string
	// Enqueued is the enqueue line found (when Confirmed).
	Enqueued domain.Enqueued
	// ConfirmNote says why the send is not confirmed ("" when it is).
	ConfirmNote string

	// WaitEnd is how the wait ended (WaitNone when no wait was asked).
	WaitEnd domain.WaitEnd
	// WaitStatus is the session's last status seen by the wait.
	WaitStatus domain.Status
	// WaitElapsed is how long the wait took.
	WaitElapsed time.Duration
	// WaitNote adds a detail (a read error, an interruption; may be "").
	WaitNote string
}

// afterDelivery confirms from the transcript and waits, as req asks.
// Elapsed is updated to cover the confirmation (not the wait).
func (s *Service) afterDelivery(ctx context.Context, req SendRequest, res SendResult) (SendResult, error) {
	res.Outcome = domain.ParseOutcome(res.Receipt.Outcome)
	res.Transcript = domain.TranscriptPath(s.configDir, res.Target.Cwd(), res.Target.ID())
	interrupted := false
	switch {
	case req.NoConfirm:
		res.ConfirmNote = "confirmation skipped"
	case s.transcripts == nil:
		res.ConfirmNote = "no transcript reader configured"
	case res.Transcript == "":
		res.ConfirmNote = "transcript path unknown (no config dir, cwd or session id)"
	default:
		timeout := req.ConfirmTimeout
		if timeout <= 0 {
			timeout = DefaultConfirmTimeout
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		e, err := s.transcripts.WaitEnqueued(cctx, res.Transcript, req.Text, res.Started)
		cancel()
		switch {
		case err == nil:
			res.Confirmed, res.Enqueued, res.Outcome = true, e, domain.OutcomeDelivered
		case ctx.Err() != nil:
			interrupted = true
			res.ConfirmNote = "interrupted before the transcript showed the text"
		case errors.Is(err, context.DeadlineExceeded):
			res.ConfirmNote = fmt.Sprintf("no enqueue line with the text in %s within %s", res.Transcript, timeout)
		default:
			res.ConfirmNote = err.Error()
		}
	}
	res.Elapsed = s.now().Sub(res.Started)
	if !res.Confirmed && req.RequireConfirm {
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "%s by %s but not confirmed: %s", res.Outcome, res.Receipt.Transport, res.ConfirmNote)
	}
	if req.Wait > 0 && !interrupted {
		since := res.Started
		if res.Confirmed {
			since = res.Enqueued.At
		}
		s.waitIdle(ctx, res.Target, since, req.Wait, &res.Confirmation)
	}
	return res, nil
}

// waitIdle follows target's record until it has gone busy and back to
// idle after since, its session ends, or d passes. Idle counts when busy
// was seen during the wait, or when the record is idle and its updatedAt
// (Claude Code 2.1.328 rewrites it with every status change) is not
// before since: a turn can start and end between two reads.
func (s *Service) waitIdle(ctx context.Context, target domain.Session, since time.Time, d time.Duration, c *Confirmation) {
	start := s.now()
	defer func() { c.WaitElapsed = s.now().Sub(start) }()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, d)
	var changes <-chan struct{}
	defer func() {
		cancel()
		if changes != nil {
			for range changes { // closed once the folder watch has ended
			}
		}
	}()
	rec := target.Record()
	var exited <-chan struct{}
	if s.exits != nil {
		exited = s.exits.Exited(ctx, rec.PID, rec.ProcStart)
	}
	c.WaitStatus = target.Status()
	sawBusy, watching := false, false
	var tick <-chan time.Time
	for {
		l, err := s.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.WaitEnd, c.WaitNote = domain.WaitTimeout, "stopped waiting: "+err.Error()
				return
			}
		} else {
			if !watching {
				watching = true
				if s.folders != nil {
					if ch, err := s.folders.Watch(ctx, l.Dir); err == nil {
						changes = ch
					}
				}
				if changes == nil || exited == nil {
					t := time.NewTicker(resyncEvery)
					defer t.Stop()
					tick = t.C
				}
			}
			e, ok := find(l.Entries, rec)
			if !ok || !e.Live() {
				c.WaitEnd = domain.WaitExited
				if ok {
					c.WaitNote = fmt.Sprintf("record %s is %s: %s", e.Record.File, e.Verdict, e.Reason)
				} else {
					c.WaitNote = "record " + rec.File + " was removed"
				}
				return
			}
			c.WaitStatus = e.Record.Status
			switch e.Record.Status {
			case domain.StatusBusy:
				sawBusy = true
			case domain.StatusIdle:
				if sawBusy || !e.Record.UpdatedAt.Before(since.Truncate(time.Millisecond)) {
					c.WaitEnd = domain.WaitIdle
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			c.WaitEnd = domain.WaitTimeout
			if parent.Err() != nil {
				c.WaitNote = "interrupted"
			}
			return
		case <-exited:
			c.WaitEnd, c.WaitNote = domain.WaitExited, fmt.Sprintf("pid %d ended", rec.PID)
			return
		case <-changes:
		case <-tick:
		}
	}
}

// find returns the entry for the same record file and session as rec.
func find(entries []domain.Entry, rec domain.Record) (domain.Entry, bool) {
	for _, e := range entries {
		if e.Record.File == rec.File && e.Record.SessionID == rec.SessionID && e.Record.PID == rec.PID {
			return e, true
		}
	}
	return domain.Entry{}, false
}
