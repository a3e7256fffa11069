package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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

// UnconfirmedHint is said with every unconfirmed send (the refusal of
// RequireConfirm, the CLI's warning) to a target that had settled: the
// transport accepted the text, so it may still arrive and a blind resend
// may deliver it twice. One to a target still starting says why instead
// (unconfirmedHint).
const UnconfirmedHint = "the text was handed to the transport and may still arrive; check before sending it again"

// unconfirmedHint is what an unconfirmed send res adds to its warning or
// refusal: StartingNote and what it means when its target had just
// started (Confirmation.Starting), else UnconfirmedHint.
func unconfirmedHint(res SendResult) string {
	if !res.Starting {
		return UnconfirmedHint
	}
	return StartingNote(res.Target) + ", so the text may still arrive; check before sending it again"
}

// StartingNote says that target has just started and not settled
// (Service.starting), e.g. `session 26df… (pid 4652, "proj-89") has just
// started and not settled (its record shows no status yet): Claude Code
// holds messages until then (about 15 s)`. Measured on Claude Code
// 2.1.328 (domain.SettleTime).
func StartingNote(target domain.Session) string {
	return fmt.Sprintf("%s has just started and not settled (its record shows no status yet): %s holds messages until then (%s)",
		target.Label(), target.Harness().Title(), settleText)
}

// settleText is domain.SettleTime for people: "about 15 s".
var settleText = fmt.Sprintf("about %d s", int(domain.SettleTime/time.Second))

// resyncEvery is how often Watch and the wait re-read the registry when a
// watcher port is missing (the polling fallback).
const resyncEvery = 500 * time.Millisecond

// ConfirmOptions shape what Send does after the transport succeeded.
type ConfirmOptions struct {
	// NoConfirm skips reading the target's transcript: the outcome is the
	// transport's own word ("posted", "queued" or "held").
	NoConfirm bool
	// ConfirmTimeout bounds the wait for the enqueue line (0:
	// DefaultConfirmTimeout).
	ConfirmTimeout time.Duration
	// RequireConfirm turns "not confirmed" into a ReasonDeliveryFailed
	// refusal (the text may still arrive: the transport accepted it).
	RequireConfirm bool
	// Wait, when positive, follows the target's registry status after
	// delivery until the turn on this message has ended (idle after the
	// message was taken up), the session ends, or Wait passes (see
	// Confirmation.WaitEnd and Service.waitIdle).
	Wait time.Duration
}

// Confirmation is what Send learned after the transport succeeded.
type Confirmation struct {
	// Outcome is OutcomeDelivered when confirmed, else the transport's
	// word: OutcomePosted (socket, inbox), OutcomeQueued or OutcomeHeld (courier, inbox).
	Outcome domain.Outcome
	// Confirmed is true when the target's transcript shows the text.
	Confirmed bool
	// Transcript is the file read ("" when unknown).
	Transcript string
	// Enqueued is the enqueue line found (when Confirmed).
	Enqueued domain.Enqueued
	// ConfirmNote says why the send is not confirmed ("" when it is).
	ConfirmNote string
	// Starting is true when the target had just started and not settled
	// when the send began (Service.starting): it holds what is posted to
	// it until it has, so an unconfirmed send says so (unconfirmedHint).
	Starting bool
	// ConfirmSkipped is true when ConfirmOptions.NoConfirm was asked.
	ConfirmSkipped bool
	// ByReceipt is true when the target harness's receipt is the
	// confirmation (ports.ConfirmRule.ByReceipt): no transcript was read.
	ByReceipt bool

	// WaitEnd is how the wait ended (WaitNone when no wait was asked).
	WaitEnd domain.WaitEnd
	// WaitStatus is the session's last status seen by the wait;
	// WaitingFor what it waited on when that is StatusWaiting.
	WaitStatus domain.Status
	WaitingFor string
	// WaitElapsed is how long the wait took.
	WaitElapsed time.Duration
	// WaitNote adds a detail (a read error, an interruption, a take-up
	// that could not be checked; may be "").
	WaitNote string
	// TakenUpAt is when the target took the message up: the timestamp of
	// its transcript's peer "user" line carrying the text (zero when not
	// seen).
	TakenUpAt time.Time
}

// markTranscript records the target transcript's identity and size before
// the transport runs, so that lines already there (whatever their
// timestamps say) never confirm this send. The zero mark when no
// confirmation will be read.
func (s *Service) markTranscript(req SendRequest, target domain.Session) ports.TranscriptMark {
	if req.NoConfirm || s.transcripts == nil {
		return ports.TranscriptMark{}
	}
	path := s.transcriptOf(target.Record())
	if path == "" {
		return ports.TranscriptMark{}
	}
	return s.transcripts.Mark(path)
}

// afterDelivery confirms from the transcript and waits, as req asks; mark
// is the transcript's position taken before the transport ran. heed, when
// the transport is a ports.Heeding, listens for the target's notice about
// the message while the transcript is read (until the enqueue line shows
// or the confirmation window passes; not at all under NoConfirm): a held
// notice makes the outcome "held", a refused one a ReasonDeliveryFailed
// refusal. Elapsed is updated to cover the confirmation (not the wait);
// ConfirmElapsed is the confirmation window's own time (0 under NoConfirm).
func (s *Service) afterDelivery(ctx context.Context, req SendRequest, res SendResult, mark ports.TranscriptMark, heed ports.Heed) (SendResult, error) {
	res.Transcript = s.transcriptOf(res.Target.Record())
	res.Starting = s.starting(res.Target, res.Started)
	timeout := req.ConfirmTimeout
	if timeout <= 0 {
		timeout = DefaultConfirmTimeout
	}
	// A send that waits (Wait, AwaitReply) tells of its hand-over now, and
	// its wait counts from here: the confirmation is watched within the
	// wait's time, never past it.
	handedAt := s.now()
	wait, awaited := req.Wait, req.AwaitReply > 0
	if awaited {
		wait = req.AwaitReply
	}
	trace := traceOf(ctx)
	if wait > 0 && !req.NoConfirm {
		timeout = min(timeout, wait)
		trace.handed(res, Awaiting{Reply: awaited, Target: res.Target.Name(), Until: handedAt.Add(wait)}, true)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if req.NoConfirm {
		// Not listening either: the transport's word stands.
		cctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	confirming := s.now()
	heard := startHeed(cctx, cancel, heed, res.Receipt)
	interrupted := false
	switch {
	case req.NoConfirm:
		res.ConfirmNote, res.ConfirmSkipped = "confirmation skipped", true
	case s.transcripts == nil:
		res.ConfirmNote = "no transcript reader configured"
		<-cctx.Done() // the window to hear a notice
	case res.Transcript == "":
		res.ConfirmNote = "transcript path unknown (no config dir, cwd or session id)"
		<-cctx.Done()
	default:
		e, err := s.transcripts.WaitEnqueued(cctx, ports.EnqueueQuery{Path: res.Transcript, Text: req.Text,
			SessionID: res.Target.ID(), Since: res.Started, Mark: mark})
		h := heard.stop()
		switch {
		case h.err != nil, h.turned:
			// The target's notice decides (it came first, or ended the window).
			res.ConfirmNote = "the target's delivery notice said " + h.rec.Outcome
		case err == nil:
			res.Confirmed, res.Enqueued, res.Outcome = true, e, domain.OutcomeDelivered
		case ctx.Err() != nil:
			interrupted = true
			res.ConfirmNote = "interrupted before the transcript showed the text"
		case errors.Is(err, context.DeadlineExceeded):
			res.ConfirmNote = fmt.Sprintf("no enqueue line with the text in %s within %s", res.Transcript, timeout)
			var n interface{ ConfirmNote() string }
			if errors.As(err, &n) && n.ConfirmNote() != "" {
				res.ConfirmNote += " (" + n.ConfirmNote() + ")"
			}
		default:
			res.ConfirmNote = err.Error()
		}
	}
	h := heard.stop()
	if !req.NoConfirm {
		res.ConfirmElapsed = s.now().Sub(confirming)
	}
	res.Receipt = h.rec
	if h.err != nil {
		res.Elapsed = s.now().Sub(res.Started)
		return res, h.err
	}
	if !res.Confirmed {
		res.Outcome = domain.ParseOutcome(res.Receipt.Outcome)
	}
	res.Elapsed = s.now().Sub(res.Started)
	if !res.Confirmed && req.RequireConfirm {
		return res, domain.Refuse(domain.ReasonDeliveryFailed, "%s by %s but not confirmed: %s; %s", res.Outcome, res.Receipt.Transport, res.ConfirmNote, unconfirmedHint(res))
	}
	if wait > 0 && !req.NoConfirm {
		trace.confirmation(res)
	}
	if req.Handed != nil {
		req.Handed(res)
	}
	if req.Wait > 0 && interrupted {
		// Interrupted before the wait could begin: it ended so all the same.
		res.WaitEnd, res.WaitStatus = domain.WaitInterrupted, res.Target.Status()
	}
	if req.Wait > 0 && !interrupted {
		w := waitFor{since: res.Started, busyBefore: res.Target.Status() == domain.StatusBusy}
		switch {
		case req.NoConfirm:
			w.fallback = "transcript not read (--no-confirm)"
		case s.transcripts == nil || res.Transcript == "":
			w.fallback = "no transcript"
		case res.Confirmed:
			w.path, w.text, w.from, w.takeSince = res.Transcript, req.Text, res.Enqueued.Offset, res.Enqueued.At
		default:
			// Not seen in time (a session still starting holds posts):
			// the take-up line, when it comes, is still the proof.
			w.path, w.text, w.takeSince = res.Transcript, req.Text, res.Started
			if mark.File != nil {
				w.from = mark.Size // what the file held before the send is not ours
			}
		}
		if req.NoConfirm {
			trace.handed(res, Awaiting{Target: res.Target.Name(), Until: handedAt.Add(req.Wait)}, false)
		}
		s.waitIdle(ctx, res.Target, w, max(0, handedAt.Add(req.Wait).Sub(s.now())), &res.Confirmation)
		res.WaitElapsed = s.now().Sub(handedAt) // the wait counts from the hand-over
	}
	return res, nil
}

// waitFor says what ends a wait.
type waitFor struct {
	// since is when the send began.
	since time.Time
	// busyBefore: the target was busy when it was resolved, before the send.
	busyBefore bool
	// path, text, from, takeSince: where to look for the take-up line
	// (ports.Transcripts.TakenUp); path is "" when there is no transcript.
	path, text string
	from       int64
	takeSince  time.Time
	// fallback says why the take-up cannot be looked for ("" when it can).
	fallback string
}

// waitIdle follows target's record until the turn on our message has
// ended, its session ends, or d passes.
//
// With a transcript, the turn on our message begins when the session takes
// it up: the transcript's peer "user" line carrying the text (TakenUp),
// written only after the turns queued ahead of it. The wait ends on a
// record whose status is idle and whose statusUpdatedAt (epoch ms, Claude
// Code 2.1.328) is later than that line: a session busy with earlier work
// when the send began cannot end the wait with the end of that work. It
// re-reads on every change of the registry folders and of the
// transcript's folder: Claude Code writes its transcript in batches, so
// the take-up line may reach the file after the record already says idle.
//
// Without one (fallback) it ends on idle after an observed transition
// into busy after the send began: a busy record whose status changed
// after the send began, or busy since the record read before
// (domain.StatusesBetween: seen, or an idle whose statusUpdatedAt moved,
// a turn between two reads). A record
// rewritten idle after the send began counts alone only when the target
// was not busy before the send. The note says the take-up was not
// checked: with several messages queued ahead, the first turn that began
// after the send may be another message's.
func (s *Service) waitIdle(ctx context.Context, target domain.Session, w waitFor, d time.Duration, c *Confirmation) {
	start := s.now()
	defer func() {
		c.WaitElapsed = s.now().Sub(start)
		switch {
		case w.path != "" || c.WaitNote != "":
		case c.WaitEnd == domain.WaitIdle:
			c.WaitNote = "take-up not checked (" + w.fallback + "): ended on the first turn that began after the send"
		case c.WaitEnd == domain.WaitTimeout:
			c.WaitNote = "take-up not checked (" + w.fallback + ")"
		}
	}()
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
	seen := &waitingSeen{trace: traceOf(parent)}
	gone := s.watchEnd(ctx, rec)
	c.WaitStatus, c.WaitingFor = target.Status(), target.WaitingFor()
	since := w.since.Truncate(time.Millisecond)
	busyAfter, first, watching := false, true, false
	var last *domain.Record // the record as read before (nil: not yet)
	var tick <-chan time.Time
	for {
		l, err := s.Read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.WaitEnd, c.WaitNote = domain.WaitFailed, "stopped waiting: "+err.Error()
				return
			}
		} else {
			if !watching {
				watching = true
				if s.folders != nil {
					// Every registry folder (the target's may be any
					// harness's), and the transcript's: Claude Code writes
					// the take-up line in batches, after the record may
					// already say idle, so that line can be the last change.
					dirs := append([]string{l.Dir}, l.Also...)
					if w.path != "" {
						dirs = append(dirs, filepath.Dir(w.path))
					}
					changes = s.watchFolders(ctx, dirs)
				}
				if changes == nil || gone.exited == nil {
					t := time.NewTicker(resyncEvery)
					defer t.Stop()
					tick = t.C
				}
			}
			if note, ended := gone.see(l); ended {
				c.WaitEnd, c.WaitNote = domain.WaitExited, note
				return
			}
			if gone.missing() && tick == nil {
				t := time.NewTicker(resyncEvery)
				defer t.Stop()
				tick = t.C
			}
		}
		if e, ok := find(l.Entries, rec); ok && err == nil && !gone.missing() {
			if w.path != "" && c.TakenUpAt.IsZero() {
				at, next, err := s.transcripts.TakenUp(ctx, w.path, w.text, w.from, w.takeSince)
				switch {
				case err != nil:
					w.path, w.fallback = "", err.Error()
				default:
					w.from, c.TakenUpAt = next, at
				}
			}
			c.WaitStatus, c.WaitingFor = e.Record.Status, e.Record.WaitingFor
			seen.see(e.Record)
			changed := e.Record.StatusTime()
			// Busy came since the read before: seen there, or in between
			// (watch's rule, so that both read a record alike).
			passed := last != nil && slices.Contains(domain.StatusesBetween(*last, e.Record), domain.StatusBusy)
			last = &e.Record
			switch e.Record.Status {
			case domain.StatusBusy:
				if first {
					w.busyBefore = true
				}
				if passed || changed.After(since) {
					busyAfter = true
				}
			case domain.StatusIdle:
				switch {
				case w.path != "":
					if !c.TakenUpAt.IsZero() && changed.After(c.TakenUpAt) {
						c.WaitEnd = domain.WaitIdle
						return
					}
				case busyAfter,
					// Idle again with a later statusUpdatedAt: a turn
					// began and ended between two reads.
					passed,
					!w.busyBefore && !changed.Before(since):
					c.WaitEnd = domain.WaitIdle
					return
				}
			}
			first = false
		}
		select {
		case <-ctx.Done():
			c.WaitEnd = domain.WaitTimeout
			if parent.Err() != nil {
				c.WaitEnd = domain.WaitInterrupted
			}
			if gone.missing() {
				// The status is what the record said before it went.
				c.WaitNote = fmt.Sprintf("record %s missing or unreadable for the last %s; status as last read",
					rec.File, s.now().Sub(gone.missingSince).Round(time.Millisecond))
			}
			return
		case <-gone.exited:
			c.WaitEnd, c.WaitNote = domain.WaitExited, gone.exitNote()
			return
		case <-changes:
		case <-tick:
		}
	}
}

// endWatch is the rule by which a wait after a hand-over (--wait,
// --await-reply) calls its target ended: its record is missing or
// unreadable and its pid is gone or another process's (at once), or its
// pid's liveness is unknown and the record stays so for recordGoneAfter;
// its record reads as no longer live; or the exit watcher saw its process
// end (exited). A record missing for a moment while its pid lives
// (rewritten in place, a folder moved) is no end.
type endWatch struct {
	s   *Service
	rec domain.Record
	// exited is closed when the exit watcher sees the process end (nil
	// without one).
	exited <-chan struct{}
	// missingSince is when the record was first seen missing or torn
	// (zero: it is there).
	missingSince time.Time
}

// watchEnd is the endWatch of rec, its exit watched until ctx ends.
func (s *Service) watchEnd(ctx context.Context, rec domain.Record) *endWatch {
	w := &endWatch{s: s, rec: rec}
	if s.exits != nil {
		w.exited = s.exits.Exited(ctx, rec.PID, s.exitStart(rec))
	}
	return w
}

// see takes one read of the registry and says whether the target has
// ended, with why (e.g. "record 2707.json was removed and pid 2707 is
// gone").
func (w *endWatch) see(l Listing) (note string, ended bool) {
	rec := w.rec
	e, ok := find(l.Entries, rec)
	switch {
	case !ok || e.Verdict == domain.VerdictMalformed || e.Verdict == domain.VerdictUnreadable:
		if w.missingSince.IsZero() {
			w.missingSince = w.s.now()
		}
		alive := w.s.live.Check(rec)
		gone := alive.Alive == domain.No || alive.StartMatches == domain.No
		if !gone && (alive.Alive == domain.Yes || w.s.now().Sub(w.missingSince) < recordGoneAfter) {
			return "", false
		}
		what := "was removed"
		if ok {
			what = fmt.Sprintf("is %s: %s", e.Verdict, e.Reason)
		}
		if !gone {
			return fmt.Sprintf("record %s %s for %s (pid %d could not be checked)", rec.File, what, recordGoneAfter, rec.PID), true
		}
		return fmt.Sprintf("record %s %s and pid %d is gone", rec.File, what, rec.PID), true
	case !e.Live():
		return fmt.Sprintf("record %s is %s: %s", e.Record.File, e.Verdict, e.Reason), true
	}
	w.missingSince = time.Time{}
	return "", false
}

// missing says whether the last read found the record missing or torn.
func (w *endWatch) missing() bool { return !w.missingSince.IsZero() }

// exitNote says why the wait ended when exited was closed.
func (w *endWatch) exitNote() string { return fmt.Sprintf("its process %d exited", w.rec.PID) }

// recordGoneAfter is how long a record must stay missing or unreadable,
// with its pid's liveness unknown, before the wait calls the session
// exited. With the pid known alive it never does; known gone, at once.
const recordGoneAfter = 2 * time.Second

// find returns the entry for the same record file and session as rec.
func find(entries []domain.Entry, rec domain.Record) (domain.Entry, bool) {
	for _, e := range entries {
		if e.Record.File == rec.File && e.Record.SessionID == rec.SessionID && e.Record.PID == rec.PID {
			return e, true
		}
	}
	return domain.Entry{}, false
}

// heeding is a running ports.Heed (or none).
type heeding struct {
	cancel context.CancelFunc
	done   chan heedEnd
	end    *heedEnd
}

type heedEnd struct {
	rec    domain.Receipt
	err    error
	turned bool // the receipt's outcome changed
}

// startHeed runs heed until ctx ends; a notice that turns the receipt ends
// the confirmation window too (stopWindow). With a nil heed it returns a
// heeding whose stop gives rec unchanged.
func startHeed(ctx context.Context, stopWindow context.CancelFunc, heed ports.Heed, rec domain.Receipt) *heeding {
	h := &heeding{done: make(chan heedEnd, 1)}
	if heed == nil {
		h.cancel = func() {}
		h.done <- heedEnd{rec: rec}
		return h
	}
	hctx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	go func() {
		got, err := heed(hctx)
		turned := err != nil || got.Outcome != rec.Outcome
		if turned {
			stopWindow()
		}
		if err != nil {
			got = rec
		}
		h.done <- heedEnd{rec: got, err: err, turned: turned}
	}()
	return h
}

// stop ends the listening (if still on) and returns how it ended; it may be
// called more than once.
func (h *heeding) stop() heedEnd {
	if h.end == nil {
		h.cancel()
		e := <-h.done
		h.end = &e
	}
	return *h.end
}
