package codex

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

var _ ports.Couriers = (*AppServer)(nil)

// StartCourier opens one connection to the daemon that sends (as
// Deliver does) and hears the answers: when a turn a send started (or
// joined) completes, its last agentMessage arrives on Inbound as the
// thread's reply (From: the thread id, FromName: peerctl's name for it,
// the thread id). ctx bounds the courier's whole life.
func (t *AppServer) StartCourier(ctx context.Context) (ports.Courier, error) {
	cctx, cancel := context.WithCancel(ctx)
	c, err := dial(cctx, t.cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	k := &courier{cfg: t.cfg, conn: c, cancel: cancel, inbound: make(chan domain.Inbound, 16),
		notices: make(chan domain.Notice), done: make(chan struct{}), turns: map[string]string{}, early: map[string]domain.Inbound{}}
	go k.listen(cctx)
	return k, nil
}

// courier is one long-lived connection (ports.Courier).
type courier struct {
	cfg     Config
	conn    *codexapp.Conn
	cancel  context.CancelFunc
	inbound chan domain.Inbound
	notices chan domain.Notice
	done    chan struct{}
	once    sync.Once

	sends sync.Mutex // one Send at a time
	mu    sync.Mutex
	feed  chan codexapp.Notification // the running Send's copy of the notifications
	turns map[string]string          // turn id -> thread id, for the turns sends started
	// early holds replies of turns that completed before their Send
	// registered them (a fast turn), at most maxEarly.
	early map[string]domain.Inbound
}

// maxEarly bounds courier.early.
const maxEarly = 64

// Send posts msg on the courier's connection (see Deliver). Calls are
// serialized.
func (k *courier) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	k.sends.Lock()
	defer k.sends.Unlock()
	t := AppServer{cfg: k.cfg}
	if err := t.check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	// The courier's own reader consumes the notifications: post waits
	// on a copy of them fed for this send.
	feed := make(chan codexapp.Notification, 256)
	k.mu.Lock()
	k.feed = feed
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.feed = nil
		k.mu.Unlock()
	}()
	rec, _, err := post(ctx, k.cfg, k.conn, feed, target, msg, func(turn string) { k.register(ctx, turn, target.ID()) })
	return rec, err
}

// register makes turn's reply the courier's to hear; a reply that came
// first is delivered now.
func (k *courier) register(ctx context.Context, turn, thread string) {
	k.mu.Lock()
	in, early := k.early[turn]
	if early {
		delete(k.early, turn)
	} else {
		k.turns[turn] = thread
	}
	k.mu.Unlock()
	if early && in.From == thread {
		select {
		case k.inbound <- in:
		case <-ctx.Done():
		}
	}
}

// listen reads the connection's notifications until it ends: it copies
// them to the running send, and turns each completed turn of ours into
// its reply.
func (k *courier) listen(ctx context.Context) {
	defer close(k.done)
	defer close(k.inbound)
	defer close(k.notices)
	last := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-k.conn.Notifications():
			if !ok {
				return
			}
			k.mu.Lock()
			if k.feed != nil {
				select {
				case k.feed <- n:
				default:
				}
			}
			k.mu.Unlock()
			switch n.Method {
			case "item/completed":
				var it item
				if json.Unmarshal(n.Params, &it) == nil && it.Item.Type == "agentMessage" {
					last[it.TurnID] = it.Item.Text
				}
			case "turn/completed":
				thread, turn := turnOf(n.Params)
				text := last[turn]
				delete(last, turn)
				if e := turnError(n.Params); e != "" && text == "" {
					text = "[the turn ended with an error: " + e + "]"
				}
				in := domain.NewInbound(thread, thread, text, time.Now())
				k.mu.Lock()
				mine := k.turns[turn] == thread && thread != ""
				delete(k.turns, turn)
				if !mine && len(k.early) < maxEarly {
					k.early[turn] = in
				}
				k.mu.Unlock()
				if !mine {
					continue
				}
				select {
				case k.inbound <- in:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

func (k *courier) Inbound() <-chan domain.Inbound { return k.inbound }
func (k *courier) Notices() <-chan domain.Notice  { return k.notices }
func (k *courier) Done() <-chan struct{}          { return k.done }

// Close ends the connection and the listener; safe to call more than once.
func (k *courier) Close() error {
	k.once.Do(func() {
		k.cancel()
		_ = k.conn.Close()
	})
	<-k.done
	return nil
}
