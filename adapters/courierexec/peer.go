package courierexec

import (
	"context"
	"sync"

	"github.com/peerctl/peerctl/adapters/internal/repeat"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

var (
	_ ports.Couriers = (*Transport)(nil)
	_ ports.Courier  = (*Peer)(nil)
)

// Peer is a running Courier as a ports.Courier: sends take a resolved
// target and give a domain.Receipt, and the courier's own turns are split
// into peer messages (Inbound, as domain.Inbound) and delivery notices
// (Notices). Start one with Transport.StartCourier.
type Peer struct {
	c       *Courier
	repeats repeat.Guard // the previous text sent to each target: a Peer is one sender
	inbound chan domain.Inbound
	notices chan domain.Notice
	stop    chan struct{}
	split   sync.WaitGroup
	once    sync.Once
	err     error
}

// StartCourier starts a long-lived courier (see Start) and returns it as a
// ports.Courier. ctx bounds its whole life. Failures are *domain.Refusal
// values with ReasonDeliveryFailed.
func (t *Transport) StartCourier(ctx context.Context) (ports.Courier, error) {
	c, err := t.Start(ctx)
	if err != nil {
		return nil, err
	}
	return newPeer(c), nil
}

func newPeer(c *Courier) *Peer {
	p := &Peer{c: c, repeats: repeat.Guard{Sender: "courier"}, inbound: make(chan domain.Inbound, InboundBuffer), notices: make(chan domain.Notice, InboundBuffer),
		stop: make(chan struct{})}
	p.split.Add(1)
	go p.run()
	return p
}

// run splits the courier's Inbound until it is closed or the Peer closes.
// A reader that falls InboundBuffer behind loses the newest (counted in
// the courier's Stats().Dropped), as the courier itself does.
func (p *Peer) run() {
	defer p.split.Done()
	defer close(p.inbound)
	defer close(p.notices)
	for {
		select {
		case <-p.stop:
			return
		case in, ok := <-p.c.Inbound():
			if !ok {
				return
			}
			switch in.Kind {
			case InboundMessage:
				select {
				case p.inbound <- domain.NewInbound(in.From, in.FromName, in.Body, in.At):
				default:
					p.c.ep.dropped.Add(1)
				}
			case InboundNotice:
				select {
				case p.notices <- domain.Notice{MsgID: in.MsgID, Verdict: in.Verdict, Text: in.Text, At: in.At}:
				default:
					p.c.ep.dropped.Add(1)
				}
			}
		}
	}
}

// Send checks target and msg as Deliver does, then sends msg on the
// running courier and returns the receipt: outcome "queued", Claude Code's
// msg_id and words. A text identical to the previous one this Peer sent to
// the same target, within repeat.Window, is refused (delivery_failed)
// without sending: the receiver would drop it (package repeat). One send is bounded by Config.Timeout (or ctx's
// earlier deadline); a send that runs out of time ends the courier (its
// process group), as Courier.Send does.
func (p *Peer) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	if err := checkTarget(target, msg); err != nil {
		return domain.Receipt{}, err
	}
	done, err := p.repeats.Begin(target, msg.Text())
	if err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.c.cfg.Timeout)
	defer cancel()
	res, err := p.c.Send(ctx, target.SocketPath(), msg.Text())
	// A send that failed is not the session's previous message from us;
	// one whose outcome is unknown may be.
	r, refused := domain.AsRefusal(err)
	done(err == nil || refused && r.Reason == domain.ReasonOutcomeUnknown)
	if err != nil {
		return domain.Receipt{}, err
	}
	return queued(res), nil
}

// Inbound delivers the peer messages that reached the courier.
func (p *Peer) Inbound() <-chan domain.Inbound { return p.inbound }

// Notices delivers the delivery notices about the courier's messages.
func (p *Peer) Notices() <-chan domain.Notice { return p.notices }

// Done is closed once the courier process has exited.
func (p *Peer) Done() <-chan struct{} { return p.c.Done() }

// Courier is the running courier underneath (its Stats, Output, Started).
func (p *Peer) Courier() *Courier { return p.c }

// Close closes the courier (see Courier.Close) and the Peer's channels.
func (p *Peer) Close() error {
	p.once.Do(func() {
		p.err = p.c.Close()
		close(p.stop)
		p.split.Wait()
	})
	return p.err
}
