package app

import (
	"context"
	"sort"
	"sync"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// HarnessCouriers are the long-lived couriers of each harness: Claude
// Code's courier process and Qwen Code's reply inbox. send --await-reply
// starts the target harness's own; StartCourier (a Relay) starts one
// courier that sends to every harness listed (see StartCourier). A plain
// ports.Couriers given to WithCouriers counts as Claude Code's.
type HarnessCouriers map[domain.Harness]ports.Couriers

var _ ports.Couriers = HarnessCouriers(nil)

// For returns the couriers of target's harness, or a harness_unsupported
// refusal when there are none.
func (hc HarnessCouriers) For(target domain.Session) (ports.Couriers, error) {
	if c, ok := hc[target.Harness()]; ok && c != nil {
		return c, nil
	}
	return nil, domain.Refuse(domain.ReasonHarnessUnsupported, "%s is a %s session, and no long-lived courier reaches %s sessions (awaiting a reply and relaying need one)", target.Label(), target.Harness(), target.Harness())
}

func (hc HarnessCouriers) harnesses() []domain.Harness {
	hs := make([]domain.Harness, 0, len(hc))
	for h, c := range hc {
		if c != nil {
			hs = append(hs, h)
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	return hs
}

// StartCourier starts one courier per harness and joins them: Send goes
// to the target harness's courier, Inbound and Notices carry every
// member's, and Done closes when any member ends (a Relay then starts them
// all anew). A harness whose courier cannot start is left out: a send to
// it tries to start it again, and refuses with the start's error when that
// fails too. It fails only when no member starts.
func (hc HarnessCouriers) StartCourier(ctx context.Context) (ports.Courier, error) {
	hs := hc.harnesses()
	if len(hs) == 0 {
		return nil, ErrNoCouriers
	}
	j := &joined{hc: hc, life: ctx, members: map[domain.Harness]ports.Courier{}, failed: map[domain.Harness]error{},
		inbound: make(chan domain.Inbound, RelayInboundBuffer), notices: make(chan domain.Notice, RelayInboundBuffer),
		done: make(chan struct{})}
	var first error
	for _, h := range hs {
		if err := j.start(h); err != nil && first == nil {
			first = err
		}
	}
	if len(j.members) == 0 {
		return nil, first
	}
	return j, nil
}

// joined is the courier HarnessCouriers.StartCourier returns.
type joined struct {
	hc   HarnessCouriers
	life context.Context

	mu      sync.Mutex // guards members, failed, closed
	members map[domain.Harness]ports.Courier
	failed  map[domain.Harness]error
	closed  bool

	inbound  chan domain.Inbound
	notices  chan domain.Notice
	done     chan struct{}
	doneOnce sync.Once
	wg       sync.WaitGroup
	close    sync.Once
}

// start starts h's courier and forwards its channels. Called with mu held
// or before j is shared.
func (j *joined) start(h domain.Harness) error {
	c, err := j.hc[h].StartCourier(j.life)
	if err != nil {
		j.failed[h] = err
		return err
	}
	delete(j.failed, h)
	j.members[h] = c
	j.wg.Add(1)
	go j.forward(c)
	return nil
}

func (j *joined) forward(c ports.Courier) {
	defer j.wg.Done()
	inbound, notices := c.Inbound(), c.Notices()
	for inbound != nil || notices != nil {
		select {
		case in, ok := <-inbound:
			if !ok {
				inbound = nil
				continue
			}
			j.inbound <- in // closed only after every forward ended
		case n, ok := <-notices:
			if !ok {
				notices = nil
				continue
			}
			j.notices <- n
		case <-c.Done():
			j.doneOnce.Do(func() { close(j.done) })
			// Keep forwarding what is left until the member closes its channels.
			if inbound != nil {
				for in := range inbound {
					j.inbound <- in
				}
			}
			if notices != nil {
				for n := range notices {
					j.notices <- n
				}
			}
			return
		}
	}
}

func (j *joined) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	h := target.Harness()
	if _, ok := j.hc[h]; !ok {
		_, err := j.hc.For(target)
		return domain.Receipt{}, err
	}
	j.mu.Lock()
	c, ok := j.members[h]
	if !ok && !j.closed {
		if err := j.start(h); err != nil {
			j.mu.Unlock()
			return domain.Receipt{}, asDeliveryFailed(err)
		}
		c = j.members[h]
	}
	j.mu.Unlock()
	if c == nil {
		return domain.Receipt{}, domain.Refuse(domain.ReasonDeliveryFailed, "the courier is closed; nothing was sent")
	}
	rec, err := c.Send(ctx, target, msg)
	if err != nil {
		// The member died under the send: j is done before Send returns,
		// so the caller that checks Done right away (Relay.Send) sees it;
		// forward would close it later, or not while it is blocked.
		select {
		case <-c.Done():
			j.doneOnce.Do(func() { close(j.done) })
		default:
		}
	}
	return rec, err
}

func (j *joined) Inbound() <-chan domain.Inbound { return j.inbound }
func (j *joined) Notices() <-chan domain.Notice  { return j.notices }
func (j *joined) Done() <-chan struct{}          { return j.done }

// Close closes every member, waits for their forwarding to end and closes
// the joined channels. A reader must keep reading Inbound and Notices until
// they close (a Relay does).
func (j *joined) Close() error {
	j.close.Do(func() {
		j.mu.Lock()
		j.closed = true
		members := make([]ports.Courier, 0, len(j.members))
		for _, c := range j.members {
			members = append(members, c)
		}
		j.mu.Unlock()
		for _, c := range members {
			_ = c.Close()
		}
		j.doneOnce.Do(func() { close(j.done) })
		go func() {
			j.wg.Wait()
			close(j.inbound)
			close(j.notices)
		}()
	})
	return nil
}
