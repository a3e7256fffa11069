package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// RelayInboundBuffer is how many inbound messages a Relay holds for a slow
// reader before its couriers' own buffers start to fill.
const RelayInboundBuffer = 256

// RestartBackoff is the least time between two starts of a Relay's courier
// after it died on its own (a courier that dies at once is not restarted
// in a tight loop).
const RestartBackoff = time.Second

// ErrRelayStopped is returned by Relay.Send once the relay has stopped
// (or before it started).
var ErrRelayStopped = errors.New("relay is not running")

// Relay is one long-lived courier reused for many sends, for hosts (with
// HarnessCouriers, as the fx graph builds it, one per harness joined: a
// Claude Code courier process and a Qwen Code reply inbox): Send
// resolves and verifies exactly as Service.Send does and hands the text to
// the running courier (a warm courier sends in well under 100 ms, Claude
// Code 2.1.332), and Inbound carries every message that reaches the
// courier. When the courier process dies the Relay starts a new one (at
// once for a send, after RestartBackoff otherwise); a send in flight when
// it dies ends in a delivery_failed refusal, never in silence. Build it
// with NewRelay (fx: the Module provides it; OnStart starts the courier,
// OnStop stops it) or StartRelay.
type Relay struct {
	svc      *Service
	couriers ports.Couriers
	inbound  chan domain.Inbound

	life   context.Context // the relay's lifetime: canceled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // serializes sends; guards cur, lastStart, stopped
	cur       ports.Courier
	lastStart time.Time
	stopped   bool

	starts   atomic.Int64
	restarts atomic.Int64

	stopOnce sync.Once
	ended    chan struct{} // closed once every goroutine ended and Inbound closed
}

// RelayStats counts a Relay's courier starts.
type RelayStats struct {
	// Starts is how many couriers were started; Restarts those started
	// because the previous one had died.
	Starts, Restarts int64
}

func newRelay(svc *Service) *Relay {
	return &Relay{svc: svc, couriers: svc.couriers, inbound: make(chan domain.Inbound, RelayInboundBuffer)}
}

// StartRelay builds a Relay over svc and starts it, without fx.
func StartRelay(ctx context.Context, svc *Service) (*Relay, error) {
	r := newRelay(svc)
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Start starts the relay's first courier; ctx bounds only the start. It
// fails when the Service has no couriers or the courier cannot start.
func (r *Relay) Start(ctx context.Context) error {
	if r.couriers == nil {
		return ErrNoCouriers
	}
	r.life, r.cancel = context.WithCancel(context.Background())
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.courierLocked(ctx); err != nil {
		r.cancel()
		r.stopped = true
		return fmt.Errorf("start relay: %w", err)
	}
	return nil
}

// Stop closes the courier and waits until every goroutine of the relay has
// ended; Inbound is closed then. It may be called more than once. A send in flight ends first (its courier
// is closed under it: a delivery_failed refusal).
func (r *Relay) Stop(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.mu.Lock()
	r.stopped = true
	c := r.cur
	r.cur = nil
	r.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	r.stopOnce.Do(func() {
		r.ended = make(chan struct{})
		go func() {
			r.wg.Wait()
			close(r.inbound)
			close(r.ended)
		}()
	})
	select {
	case <-r.ended:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop relay: %w", ctx.Err())
	}
}

// Unstarted names each harness whose courier did not start with the
// relay's (a joined courier leaves such a member out), with why: a send
// to that harness tries to start it again, and refuses with the start's
// error when that fails too. Empty when every courier started. A harness
// that could not have had a session here (not installed, no state: see
// Service.couldHave) is left out: its courier is nobody's concern until
// a send to one of its sessions, which says why.
func (r *Relay) Unstarted() map[domain.Harness]error {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.cur.(*joined)
	if !ok {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := maps.Clone(j.failed)
	maps.DeleteFunc(out, func(h domain.Harness, _ error) bool { return !r.svc.couldHave(h) })
	return out
}

// Inbound delivers every cross-session message that reaches the relay's
// courier, in arrival order; it is closed once the relay has stopped. A
// reader must keep up: when RelayInboundBuffer messages wait unread, the
// courier's own buffer fills and later messages are dropped.
func (r *Relay) Inbound() <-chan domain.Inbound { return r.inbound }

// Stats returns the relay's counters so far.
func (r *Relay) Stats() RelayStats {
	return RelayStats{Starts: r.starts.Load(), Restarts: r.restarts.Load()}
}

// Send resolves and verifies req.Address on a fresh registry read exactly
// as Service.Send does (the same code), then hands req.Text to the relay's
// running courier, starting a new courier first if the last one died. The
// receipt is the courier's ("queued" with Claude Code's msg_id; for a Qwen
// Code target its receipt's word with the frame's msgId). Only Address and
// Text of req are used: a relay does not read transcripts or wait. Every
// failure is a *domain.Refusal (ReasonOutcomeUnknown when the courier died
// under the send after it had the text, ReasonDeliveryFailed before), or
// ErrRelayStopped. Sends are serialized, in call order.
func (r *Relay) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	res := SendResult{Started: r.svc.now()}
	msg, target, err := r.svc.target(ctx, req.Address, req.Text)
	res.Target = target
	if err == nil {
		_, err = r.svc.couriersFor(target)
	}
	if err != nil {
		return res, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delivering := r.svc.now() // the transport: a new courier's start, if one is needed, and the send
	c, err := r.courierLocked(ctx)
	if err != nil {
		return res, err
	}
	res.Receipt, err = c.Send(ctx, target, msg)
	res.Elapsed, res.TransportElapsed = r.svc.now().Sub(res.Started), r.svc.now().Sub(delivering)
	if err != nil {
		err = asDeliveryFailed(err)
		select {
		case <-c.Done():
			if rf, ok := domain.AsRefusal(err); ok {
				rf.Detail += "; the relay's courier ended during the send and is restarted"
			}
		default:
		}
		return res, err
	}
	res.Outcome = domain.ParseOutcome(res.Receipt.Outcome)
	return res, nil
}

// courierLocked returns the running courier, starting one when there is
// none or the last one has died. Called with mu held.
func (r *Relay) courierLocked(ctx context.Context) (ports.Courier, error) {
	if r.stopped || r.life == nil {
		return nil, ErrRelayStopped
	}
	if r.cur != nil {
		select {
		case <-r.cur.Done():
			_ = r.cur.Close()
			r.cur = nil
			r.restarts.Add(1)
		default:
			return r.cur, nil
		}
	}
	// The courier lives as long as the relay; ctx bounds the start only.
	if err := ctx.Err(); err != nil {
		return nil, domain.Refuse(domain.ReasonDeliveryFailed, "relay courier not started: %v", err)
	}
	c, err := r.couriers.StartCourier(r.life)
	if err != nil {
		return nil, err
	}
	r.starts.Add(1)
	r.cur, r.lastStart = c, time.Now()
	r.wg.Add(1)
	go r.watch(c)
	return c, nil
}

// watch forwards c's inbound messages to the relay and drains its notices
// until c ends; then, unless the relay is stopping, it starts a new courier
// (after RestartBackoff since the last start) so replies keep arriving
// while no send runs.
func (r *Relay) watch(c ports.Courier) {
	defer r.wg.Done()
	inbound, notices := c.Inbound(), c.Notices()
	for inbound != nil || notices != nil {
		select {
		case in, ok := <-inbound:
			if !ok {
				inbound = nil
				continue
			}
			select {
			case r.inbound <- in:
			case <-r.life.Done():
				return
			}
		case _, ok := <-notices:
			if !ok {
				notices = nil
			}
		case <-c.Done():
			r.drain(c)
			r.restartAfterDeath(c)
			return
		case <-r.life.Done():
			return
		}
	}
}

// drain forwards what c's Inbound still holds once c has ended.
func (r *Relay) drain(c ports.Courier) {
	for {
		select {
		case in, ok := <-c.Inbound():
			if !ok {
				return
			}
			select {
			case r.inbound <- in:
			case <-r.life.Done():
				return
			}
		default:
			return
		}
	}
}

// restartAfterDeath replaces c, which has died, unless a send already did
// or the relay is stopping.
func (r *Relay) restartAfterDeath(c ports.Courier) {
	r.mu.Lock()
	wait := time.Until(r.lastStart.Add(RestartBackoff))
	r.mu.Unlock()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-r.life.Done():
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != c || r.stopped {
		return
	}
	// A failed start is left to the next send, which reports it.
	_, _ = r.courierLocked(r.life)
}
