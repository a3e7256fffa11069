package qweninbox

import (
	"context"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// courierBuffer is how many inbound messages and notices a Courier holds
// for a slow reader; past it, a connection to the inbox waits.
const courierBuffer = 64

// Courier is a long-lived reply inbox reused for many sends to Qwen Code
// sessions (ports.Courier): every frame it sends carries the same from, the
// inbox's path, so a session can answer a user frame there (the reply), and
// its receipts come back there too. Send waits for the receipt about its
// own msgId as Deliver does; receipts about other messages (a held message
// the user accepted or denied later) become Notices; user frames become
// Inbound. Qwen Code's duplicate rule keys a sender by its from (0.24.4:
// the same body within 30 s is dropped), so the same text sent twice to
// one session through one Courier is "dropped" the second time. Build it
// with Transport.StartCourier.
type Courier struct {
	t  *Transport
	in *Inbox

	mu      sync.Mutex // guards waiting
	waiting map[string]chan Receipt

	sendMu sync.Mutex // serializes Send

	inbound chan domain.Inbound
	notices chan domain.Notice
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	now     func() time.Time
}

var (
	_ ports.Courier  = (*Courier)(nil)
	_ ports.Couriers = (*Transport)(nil)
)

// StartCourier opens peerctl's sender inbox (OpenSenderInbox: the stable
// per-user path when it is free, else a fresh one) and keeps it for the
// courier's life; ctx ending closes the courier. Failures are
// delivery_failed refusals.
func (t *Transport) StartCourier(ctx context.Context) (ports.Courier, error) {
	in, err := OpenSenderInbox(t.cfg.InboxDir)
	if err != nil {
		return nil, failed("%v", err)
	}
	c := &Courier{t: t, in: in, waiting: map[string]chan Receipt{},
		inbound: make(chan domain.Inbound, courierBuffer), notices: make(chan domain.Notice, courierBuffer),
		done: make(chan struct{}), now: time.Now}
	c.wg.Add(2)
	go c.receipts()
	go c.messages()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	go func() {
		<-c.done
		stop()
	}()
	return c, nil
}

// Path is the inbox's path, the from of every frame the courier sends.
func (c *Courier) Path() string { return c.in.Path() }

// Send posts msg to target with the courier's inbox as its from and
// returns the receipt as Transport.Deliver does (held or delivered; posted
// when no receipt came within the window; the refusing words are
// delivery_failed refusals). The receipt's MsgID is the frame's msgId.
func (c *Courier) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	select {
	case <-c.done:
		return domain.Receipt{}, failed("the reply inbox is closed; nothing was sent")
	default:
	}
	if err := c.t.check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.t.cfg.Timeout)
	defer cancel()
	msgID := NewMsgID()
	ch := make(chan Receipt, 8)
	c.mu.Lock()
	c.waiting[msgID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, msgID)
		c.mu.Unlock()
	}()
	rec, err := c.t.deliverAwaiting(ctx, c.in, target, msg, msgID, ch)
	rec.MsgID = msgID
	return rec, err
}

// receipts routes each receipt to the Send waiting for it, or else makes
// it a Notice.
func (c *Courier) receipts() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case r := <-c.in.Receipts():
			if c.route(r) {
				continue
			}
			n, ok := noticeOf(r, c.now())
			if !ok {
				continue
			}
			select {
			case c.notices <- n:
			case <-c.done:
				return
			}
		}
	}
}

func (c *Courier) route(r Receipt) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range c.waiting {
		if r.About(id) {
			select {
			case ch <- r:
			default:
			}
			return true
		}
	}
	return false
}

// noticeOf makes a receipt about an earlier message a Notice: held stays
// held; refused, denied, misaddressed, expired and dropped are refusals
// (domain.Notice.Apply). delivered, which only confirms, and unknown words
// are not notices.
func noticeOf(r Receipt, at time.Time) (domain.Notice, bool) {
	verdict := ""
	switch r.Status {
	case "held":
		verdict = "held"
	case "refused", "denied":
		verdict = "refused"
	case "misaddressed", "expired", "dropped":
		verdict = "not_delivered"
	default:
		return domain.Notice{}, false
	}
	text := "Qwen Code answered " + r.Status
	if why := statusReason(r); why != "" {
		text += ": " + oneLine(why)
	}
	return domain.Notice{MsgID: r.OrigMsgID, Verdict: verdict, Text: text, At: at}, true
}

// messages makes each user frame an Inbound: From is the sender's from as
// it wrote it (a Qwen Code session's ipcPath).
func (c *Courier) messages() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case u := <-c.in.Messages():
			select {
			case c.inbound <- domain.NewInbound(u.From, u.FromName, u.Text, c.now()):
			case <-c.done:
				return
			}
		}
	}
}

// Inbound delivers the user frames sent to the courier's inbox, in
// arrival order; closed by Close.
func (c *Courier) Inbound() <-chan domain.Inbound { return c.inbound }

// Notices delivers receipts about messages no Send waits for any more;
// closed by Close.
func (c *Courier) Notices() <-chan domain.Notice { return c.notices }

// Done is closed once the courier is closed (the inbox does not end on
// its own).
func (c *Courier) Done() <-chan struct{} { return c.done }

// Close closes the inbox (its socket is removed) and the channels; it is
// safe to call more than once.
func (c *Courier) Close() error {
	c.once.Do(func() {
		close(c.done)
		_ = c.in.Close()
		c.wg.Wait()
		close(c.inbound)
		close(c.notices)
	})
	return nil
}
