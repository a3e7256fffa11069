package app

import (
	"context"
	"sync"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// warmNotices is how many delivery notices a warm courier remembers for a
// heed that asks after its send returned.
const warmNotices = 256

// Warm keeps one long-lived courier per harness whose default transport
// can start couriers (ports.Couriers: Claude Code's courier), for peerctl
// serve: a send through Wrap's transport hands the text to the running
// courier instead of starting one (Claude Code 2.1.332: about 0.2 s
// instead of 1 to 3 s), with the same receipt: outcome "queued" with
// Claude Code's msg_id, turned "held" or refused by a delivery notice
// about that msg_id as the one-shot courier's is. A courier that died is
// started again by the next send. Build it with NewWarm; Close ends every
// courier.
type Warm struct {
	life context.Context
	mu   sync.Mutex
	by   map[domain.Harness]*warmCourier
	// starts counts the couriers started (tests, stats).
	starts int
}

// NewWarm builds a Warm whose couriers live until life ends or Close.
func NewWarm(life context.Context) *Warm {
	return &Warm{life: life, by: map[domain.Harness]*warmCourier{}}
}

// Starts is how many couriers were started so far.
func (w *Warm) Starts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts
}

// Close closes every running courier.
func (w *Warm) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wc := range w.by {
		wc.close()
	}
	return nil
}

// Wrap returns t (a *Router: NewTransport's) with each harness's default
// transport that starts couriers replaced by a send on Warm's courier for
// that harness; a transport chosen by name, and every other harness, go
// through t as before. Anything but a *Router is returned as it is.
func (w *Warm) Wrap(t ports.Transport) ports.Transport {
	r, ok := t.(*Router)
	if !ok || r.Chosen != "" {
		return t
	}
	by := make(map[domain.Harness][]ports.Transport, len(r.By))
	for k, ts := range r.By {
		by[k] = append([]ports.Transport(nil), ts...)
		if len(ts) > 0 {
			if cs, ok := ts[0].(ports.Couriers); ok {
				by[k][0] = &warmTransport{Transport: ts[0], warm: w, kind: k, starter: cs}
			}
		}
	}
	return &Router{Chosen: r.Chosen, By: by}
}

func (w *Warm) courier(k domain.Harness) *warmCourier {
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.by[k]
	if wc == nil {
		wc = &warmCourier{warm: w, recent: map[string]domain.Notice{}, changed: make(chan struct{})}
		w.by[k] = wc
	}
	return wc
}

// warmTransport is one harness's default transport sending on Warm's
// courier; Plan is the wrapped transport's.
type warmTransport struct {
	ports.Transport
	warm    *Warm
	kind    domain.Harness
	starter ports.Couriers
}

var (
	_ ports.Heeding  = (*warmTransport)(nil)
	_ ports.Couriers = (*warmTransport)(nil)
)

// StartCourier starts a courier of its own, as the wrapped transport
// does: a send that waits for the turn's end or a reply keeps its courier
// open to hear it (sendAwaiting), which the shared warm one cannot be.
func (t *warmTransport) StartCourier(ctx context.Context) (ports.Courier, error) {
	return t.starter.StartCourier(ctx)
}

// Deliver sends on the warm courier and returns its receipt at once.
func (t *warmTransport) Deliver(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	rec, _, err := t.DeliverHeeding(ctx, target, msg)
	return rec, err
}

// DeliverHeeding sends on the warm courier; heed waits for a delivery
// notice about the receipt's msg_id until its context ends.
func (t *warmTransport) DeliverHeeding(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, ports.Heed, error) {
	wc := t.warm.courier(t.kind)
	c, rec, err := wc.send(ctx, t.starter, target, msg)
	if err != nil {
		return rec, nil, err
	}
	return rec, func(hctx context.Context) (domain.Receipt, error) { return wc.heed(hctx, c, rec) }, nil
}

// warmCourier is one running courier; sends on it are serialized.
type warmCourier struct {
	warm   *Warm
	sendMu sync.Mutex
	cur    ports.Courier

	nmu     sync.Mutex // guards recent, order, changed
	recent  map[string]domain.Notice
	order   []string
	changed chan struct{}
}

func (wc *warmCourier) send(ctx context.Context, starter ports.Couriers, target domain.Session, msg domain.Message) (ports.Courier, domain.Receipt, error) {
	wc.sendMu.Lock()
	defer wc.sendMu.Unlock()
	if wc.cur != nil {
		select {
		case <-wc.cur.Done():
			_ = wc.cur.Close()
			wc.cur = nil
		default:
		}
	}
	if wc.cur == nil {
		if err := wc.warm.life.Err(); err != nil {
			return nil, domain.Receipt{}, domain.Refuse(domain.ReasonDeliveryFailed, "the service is stopping: no courier started")
		}
		c, err := starter.StartCourier(wc.warm.life)
		if err != nil {
			return nil, domain.Receipt{}, err
		}
		wc.warm.mu.Lock()
		wc.warm.starts++
		wc.warm.mu.Unlock()
		wc.cur = c
		go wc.pump(c)
	}
	rec, err := wc.cur.Send(ctx, target, msg)
	return wc.cur, rec, err
}

// pump keeps c's notices for heed and drops its inbound messages (nobody
// asked for replies on the shared courier) until c ends.
func (wc *warmCourier) pump(c ports.Courier) {
	inbound, notices := c.Inbound(), c.Notices()
	for inbound != nil || notices != nil {
		select {
		case _, ok := <-inbound:
			if !ok {
				inbound = nil
			}
		case n, ok := <-notices:
			if !ok {
				notices = nil
				continue
			}
			wc.nmu.Lock()
			if _, seen := wc.recent[n.MsgID]; !seen {
				wc.order = append(wc.order, n.MsgID)
			}
			wc.recent[n.MsgID] = n
			for len(wc.order) > warmNotices {
				delete(wc.recent, wc.order[0])
				wc.order = wc.order[1:]
			}
			close(wc.changed)
			wc.changed = make(chan struct{})
			wc.nmu.Unlock()
		}
	}
}

// heed waits for a notice about rec.MsgID until ctx ends or c does, and
// returns rec turned by it (domain.Notice.Apply).
func (wc *warmCourier) heed(ctx context.Context, c ports.Courier, rec domain.Receipt) (domain.Receipt, error) {
	for {
		wc.nmu.Lock()
		n, ok := wc.recent[rec.MsgID]
		changed := wc.changed
		wc.nmu.Unlock()
		if ok {
			if out, applies, err := n.Apply(rec); applies {
				return out, err
			}
		}
		select {
		case <-ctx.Done():
			return rec, nil
		case <-c.Done():
			return rec, nil
		case <-changed:
		}
	}
}

func (wc *warmCourier) close() {
	wc.sendMu.Lock()
	defer wc.sendMu.Unlock()
	if wc.cur != nil {
		_ = wc.cur.Close()
		wc.cur = nil
	}
}
