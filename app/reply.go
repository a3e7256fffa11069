package app

import (
	"context"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// WithCouriers lets Send await replies (SendRequest.AwaitReply) and a
// Relay send, on long-lived couriers.
func WithCouriers(c ports.Couriers) Option { return func(s *Service) { s.couriers = c } }

// sendAwaiting is Send with AwaitReply: it starts a courier of its own,
// sends on it, confirms as Send does (the courier's delivery notices are
// heard meanwhile), then keeps the courier open until a message from the
// target's socket arrives (the reply), req.AwaitReply passes or ctx ends,
// and closes it. Messages from anyone else are kept in OtherInbound. No
// reply is a ReasonNoReply refusal, returned with the whole result.
func (s *Service) sendAwaiting(ctx context.Context, req SendRequest, msg domain.Message, res SendResult) (SendResult, error) {
	if err := courierReaches(res.Target); err != nil {
		return res, err
	}
	mark := s.markTranscript(req, res.Target)
	c, err := s.couriers.StartCourier(ctx)
	if err != nil {
		res.Elapsed = s.now().Sub(res.Started)
		return res, asDeliveryFailed(err)
	}
	defer func() { _ = c.Close() }()
	res.Receipt, err = c.Send(ctx, res.Target, msg)
	res.Elapsed = s.now().Sub(res.Started)
	if err != nil {
		return res, asDeliveryFailed(err)
	}
	deadline := time.NewTimer(req.AwaitReply)
	defer deadline.Stop()
	heed := func(hctx context.Context) (domain.Receipt, error) { return heedNotices(hctx, c, res.Receipt) }
	res, err = s.afterDelivery(ctx, req, res, mark, heed)
	if err != nil {
		return res, err
	}
	waited := s.now()
	socket := res.Target.SocketPath()
	for {
		select {
		case in, ok := <-c.Inbound():
			if !ok {
				return res, noReply(res, "the courier closed before a reply came")
			}
			if in.IsFrom(socket) {
				res.Reply = &in
				return res, nil
			}
			res.OtherInbound = append(res.OtherInbound, in)
		case <-c.Done():
			return res, noReply(res, "the courier ended before a reply came")
		case <-deadline.C:
			return res, noReply(res, fmt.Sprintf("no reply from the session within %s (listened %s after confirming)", req.AwaitReply, s.now().Sub(waited).Round(time.Millisecond)))
		case <-ctx.Done():
			return res, noReply(res, "interrupted before a reply came")
		}
	}
}

func noReply(res SendResult, why string) error {
	outcome := res.Receipt.Outcome
	if res.Outcome != domain.OutcomeUnknown {
		outcome = res.Outcome.String()
	}
	return domain.Refuse(domain.ReasonNoReply, "the message was handed over (%s, msg_id %s) but %s", outcome, res.Receipt.MsgID, why)
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

// courierReaches refuses a target the courier cannot send to: the courier
// is Claude Code's SendMessage, which reaches Claude Code sessions only.
func courierReaches(target domain.Session) error {
	if h := target.Harness(); h != domain.HarnessClaudeCode {
		return domain.Refuse(domain.ReasonHarnessUnsupported, "session %s is a %s session: awaiting a reply and relaying go through the courier, Claude Code's SendMessage, which reaches Claude Code sessions only", target.ID(), h)
	}
	return nil
}
