package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// WithCouriers lets Send await replies (SendRequest.AwaitReply) and a
// Relay send, on long-lived couriers.
func WithCouriers(c ports.Couriers) Option { return func(s *Service) { s.couriers = c } }

// sendAwaiting is Send with AwaitReply, or with Wait for a harness whose
// turn's end is its couriers' reply (ports.ConfirmRule.ReplyEndsTurn): it
// starts a courier of its own, the target harness's (couriersFor), sends
// on it, confirms as Send does (by its harness's ports.ConfirmRule: from
// the transcript, the courier's delivery notices heard meanwhile, or by
// the receipt), then keeps the courier open until a message from the
// target arrives (the reply: domain.Inbound.IsReplyFrom), the wait's time
// passes (counted from the hand-over), the session ends or ctx does, and
// closes it. Messages from anyone else are kept in OtherInbound. With
// AwaitReply, no reply is a ReasonNoReply refusal, returned with the whole
// result; with Wait, the reply is the end of the turn (WaitIdle) and every
// ending is told in the result's wait (Confirmation.WaitEnd), as waitIdle
// tells it.
func (s *Service) sendAwaiting(ctx context.Context, req SendRequest, msg domain.Message, res SendResult) (SendResult, error) {
	if s.couriers == nil {
		return res, ErrNoCouriers
	}
	if r, ok := s.transport.(*Router); ok {
		// A transport named for another harness refuses as in a plain send.
		if _, err := r.Pick(res.Target); err != nil {
			return res, err
		}
	}
	couriers, err := s.couriersFor(res.Target)
	if err != nil {
		return res, err
	}
	rule := s.confirmRule(res.Target)
	var mark ports.TranscriptMark
	if !rule.ByReceipt {
		mark = s.markTranscript(req, res.Target)
	}
	// The transport's time is the courier's start and its send, as a
	// plain courier send's Deliver is.
	delivering := s.now()
	started := traceOf(ctx).courierStarting(couriers, res.Target)
	c, err := couriers.StartCourier(ctx)
	if err != nil {
		started()
		res.Elapsed, res.TransportElapsed = s.now().Sub(res.Started), s.now().Sub(delivering)
		return res, asDeliveryFailed(err)
	}
	defer func() { _ = c.Close() }()
	res.Receipt, err = c.Send(ctx, res.Target, msg)
	started()
	res.Elapsed, res.TransportElapsed = s.now().Sub(res.Started), s.now().Sub(delivering)
	if err != nil {
		return res, asDeliveryFailed(err)
	}
	awaited, wait := req.AwaitReply > 0, req.AwaitReply
	if !awaited {
		wait = req.Wait
	} else {
		res.ReplyNote = rule.NoReply
	}
	handed := s.now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	replyBy := handed.Add(wait)
	trace := traceOf(ctx)
	if rule.ByReceipt {
		res, err = s.receiptConfirm(req, res, rule)
	} else {
		// afterDelivery tells the hand-over before it confirms, within
		// the reply's time.
		heed := func(hctx context.Context) (domain.Receipt, error) { return heedNotices(hctx, c, res.Receipt) }
		res, err = s.afterDelivery(ctx, req, res, mark, heed)
	}
	if err != nil {
		return res, err
	}
	if rule.ByReceipt || req.NoConfirm {
		trace.handed(res, Awaiting{Reply: awaited, Target: res.Target.Name(), Until: replyBy}, false)
	}
	seen := &waitingSeen{trace: trace, last: res.Target.Status(), waitingFor: res.Target.WaitingFor()}
	waiting := s.now()
	ended, stop := s.followStatus(ctx, res.Target, seen)
	defer stop()
	none := func(why string) error {
		stop()
		return noReply(res, why, seen)
	}
	// waited ends a Wait: how, and what it saw last.
	waited := func(end domain.WaitEnd, note string) (SendResult, error) {
		stop()
		res.WaitEnd, res.WaitNote, res.WaitElapsed = end, note, s.now().Sub(handed)
		res.WaitStatus, res.WaitingFor = seen.last, seen.waitingFor
		if end == domain.WaitIdle {
			res.WaitStatus, res.WaitingFor = domain.StatusIdle, ""
		}
		return res, nil
	}
	replied := func(in domain.Inbound) (SendResult, error) {
		if !awaited {
			return waited(domain.WaitIdle, "")
		}
		res.Reply = &in
		return res, nil
	}
	for {
		select {
		case in, ok := <-c.Inbound():
			switch {
			case !ok && awaited:
				return res, none("the courier closed before a reply came")
			case !ok:
				return waited(domain.WaitFailed, "the connection that hears the turn's end closed before it ended")
			case in.IsReplyFrom(res.Target):
				return replied(in)
			}
			res.OtherInbound = append(res.OtherInbound, in)
		case <-c.Done():
			if !awaited {
				return waited(domain.WaitFailed, "the connection that hears the turn's end closed before it ended")
			}
			return res, none("the courier ended before a reply came")
		case why := <-ended:
			if in, ok := replyCame(c, res.Target, &res.OtherInbound); ok {
				// Its last words.
				return replied(in)
			}
			if !awaited {
				return waited(domain.WaitExited, why)
			}
			return res, none(fmt.Sprintf("the session ended (%s) after %s", why, s.now().Sub(waiting).Round(time.Millisecond)))
		case <-deadline.C:
			if in, ok := replyCame(c, res.Target, &res.OtherInbound); ok {
				// It came while the confirmation was watched.
				return replied(in)
			}
			if !awaited {
				return waited(domain.WaitTimeout, "")
			}
			return res, none(fmt.Sprintf("no reply from the session within %s of the hand-over", req.AwaitReply))
		case <-ctx.Done():
			if !awaited {
				return waited(domain.WaitInterrupted, "")
			}
			return res, none("the wait was interrupted before a reply came")
		}
	}
}

// replyCame takes the messages c already has, without waiting: the
// target's reply, if one is there, and the others into other.
func replyCame(c ports.Courier, target domain.Session, other *[]domain.Inbound) (domain.Inbound, bool) {
	for {
		select {
		case in, ok := <-c.Inbound():
			if !ok {
				return domain.Inbound{}, false
			}
			if in.IsReplyFrom(target) {
				return in, true
			}
			*other = append(*other, in)
		default:
			return domain.Inbound{}, false
		}
	}
}

// noReply is the no_reply refusal of a reply wait that ended for why,
// saying when the target was last seen waiting on its user.
func noReply(res SendResult, why string, seen *waitingSeen) error {
	outcome := res.Receipt.Outcome
	if res.Outcome != domain.OutcomeUnknown {
		outcome = res.Outcome.String()
	}
	if seen.last == domain.StatusWaiting {
		why += fmt.Sprintf("; the session was last seen %s%s", domain.StatusText(seen.last.String(), seen.waitingFor), answerIt(seen.last))
	}
	return domain.Refuse(domain.ReasonNoReply, "the message was handed over (%s, msg_id %s) but %s", outcome, res.Receipt.MsgID, why)
}

// followStatus reads target's record again on every change of the
// registry folders (every resyncEvery without a folder watcher, or while
// the record is missing) and hands it to seen, until ctx ends, the
// returned stop is called, or the target ends by --wait's rule
// (endWatch): then ended gets why, once. stop waits for the reading to
// end, after which seen is the caller's alone.
func (s *Service) followStatus(ctx context.Context, target domain.Session, seen *waitingSeen) (ended <-chan string, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	end := make(chan string, 1)
	gone := s.watchEnd(ctx, target.Record())
	go func() {
		defer close(done)
		var changes <-chan struct{}
		var tick <-chan time.Time
		defer func() {
			if changes != nil {
				for range changes { // closed once the folder watch has ended
				}
			}
		}()
		for first := true; ; first = false {
			l, err := s.Read(ctx)
			if err == nil {
				if why, ok := gone.see(l); ok {
					end <- why
					return
				}
				if e, ok := find(l.Entries, target.Record()); ok && !gone.missing() {
					seen.see(e.Record)
				}
			}
			if first && err == nil && s.folders != nil {
				changes = s.watchFolders(ctx, append([]string{l.Dir}, l.Also...))
			}
			if tick == nil && (changes == nil || gone.missing()) {
				t := time.NewTicker(resyncEvery)
				defer t.Stop()
				tick = t.C
			}
			select {
			case <-ctx.Done():
				return
			case <-gone.exited:
				end <- gone.exitNote()
				return
			case <-changes:
			case <-tick:
			}
		}
	}()
	var once sync.Once
	return end, func() { once.Do(func() { cancel(); <-done }) }
}

// heedNotices listens on c's notices for one about rec's msg_id until ctx
// ends or the courier does, and returns rec turned by it (domain.Notice.Apply).
// It leaves the courier running.
func heedNotices(ctx context.Context, c ports.Courier, rec domain.Receipt) (domain.Receipt, error) {
	for {
		select {
		case <-ctx.Done():
			return rec, nil
		case <-c.Done():
			return rec, nil
		case n, ok := <-c.Notices():
			if !ok {
				return rec, nil
			}
			if out, ok, err := n.Apply(rec); ok {
				return out, err
			}
		}
	}
}

// couriersFor returns the long-lived couriers that reach target's harness
// (HarnessCouriers.For); a plain ports.Couriers is the primary harness's
// (without plug-ins: the zero domain.Harness, the one a record built
// without a harness has).
func (s *Service) couriersFor(target domain.Session) (ports.Couriers, error) {
	if hc, ok := s.couriers.(HarnessCouriers); ok {
		return hc.For(target)
	}
	var primary domain.Harness
	if len(s.harnesses) > 0 {
		primary = s.harnesses[0].Kind()
	}
	return HarnessCouriers{primary: s.couriers}.For(target)
}
