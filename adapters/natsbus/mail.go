package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Durable sends across machines (docs/FLEET.md, "Durable sends"): one
// replicated stream, MailStream, holds every node's durable mail and the
// receipts that answer it, each on its own subjects:
//
//	peerctl.v1.inbox.<to>.<from>      a wire.Mail from node <from> for node <to>
//	peerctl.v1.receipts.<to>.<from>   a wire.MailReceipt from node <from> for node <to>
//
// Each node reads its own with a durable consumer filtered to its own
// subjects (InboxConsumer, ReceiptsConsumer): the servers' permissions
// (Permissions) let a node create and read only those two consumers, with
// those filters only, and publish mail and receipts as itself only. The
// stream is a work queue: a message acknowledged by its node's consumer
// is gone; one never taken is kept MailMaxAge.

// MailStream is the stream of durable mail and its receipts.
const MailStream = "peerctl_mail"

// MailMaxAge is how long the stream keeps a message its node never took
// (a node gone for good): 30 days, the outbox's retention.
const MailMaxAge = 30 * 24 * time.Hour

// mailAckWait is how long a taken mail may go unacknowledged before the
// servers deliver it again (a service that died between its store and
// its ack: the redelivery finds the key and is not stored twice).
const mailAckWait = 30 * time.Second

// mailRetry is how long a mail the service could not store now (its
// outbox unavailable) waits before it is delivered again.
const mailRetry = 5 * time.Second

// InboxSubject is the subject of mail from node from to node to ("*" for
// any: a filter).
func InboxSubject(to, from string) string {
	return "peerctl.v1.inbox." + tokenOrAll(to) + "." + tokenOrAll(from)
}

// ReceiptsSubject is the subject of receipts from node from (the one that
// took the mail) to node to (its sender); "*" for any.
func ReceiptsSubject(to, from string) string {
	return "peerctl.v1.receipts." + tokenOrAll(to) + "." + tokenOrAll(from)
}

// InboxConsumer and ReceiptsConsumer are node's durable consumers of its
// mail and of the receipts for it.
func InboxConsumer(node string) string    { return "inbox_" + consumerToken(node) }
func ReceiptsConsumer(node string) string { return "receipts_" + consumerToken(node) }

// consumerToken is node's name as part of a consumer's name ('.' is not
// allowed there: written '~', as in a subject token).
func consumerToken(node string) string { return Token(node) }

func tokenOrAll(node string) string {
	if node == "*" {
		return node
	}
	return Token(node)
}

// mailStream is MailStream, checked (checkStream) and, on an open bus,
// made when it does not exist (makeMailStream); under credentials a
// missing one is ErrNotSetUp (the operator's Setup makes it).
func (b *Bus) mailStream(ctx context.Context) (jetstream.Stream, error) {
	if b.creds {
		s, err := b.js.Stream(ctx, MailStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, notSetUp("the mail stream " + MailStream)
		}
		if err != nil {
			return nil, err
		}
		return s, checkStream(MailStream, s.CachedInfo().Config, mailStreamConfig())
	}
	return b.makeMailStream(ctx)
}

// makeMailStream is MailStream, checked (checkStream), or created when it
// does not exist (replicated: R3, R1 only where the cluster has fewer
// servers).
func (b *Bus) makeMailStream(ctx context.Context) (jetstream.Stream, error) {
	s, err := b.js.Stream(ctx, MailStream)
	if err == nil {
		return s, checkStream(MailStream, s.CachedInfo().Config, mailStreamConfig())
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	cfg := mailStreamConfig()
	err = replicated(func(replicas int) error {
		cfg.Replicas = replicas
		s, err = b.js.CreateStream(ctx, cfg)
		return err
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if s, err = b.js.Stream(ctx, MailStream); err == nil { // another node made it meanwhile
			err = checkStream(MailStream, s.CachedInfo().Config, mailStreamConfig())
		}
	}
	return s, err
}

// PostMail puts o, node from's durable send, in node to's mail, and
// returns once the servers have stored it (a JetStream publish ack). Its
// key is required; the same from, key and retry again within the
// stream's de-duplication window (2 minutes) is stored once (Nats-Msg-Id),
// and the receiving outbox keeps one message per sender and key after
// that. retry is the sender's outbox retry of it (0: its first post): the
// node's service retries its message of that key once per number
// (wire.Mail.Retry). Errors: a bad node name, no key, a negative retry, a
// bus that did not store it.
func (b *Bus) PostMail(ctx context.Context, to, from string, o wire.SendOrder, retry int) error {
	for _, n := range []string{to, from} {
		if _, err := domain.ParseNode(n); err != nil {
			return err
		}
	}
	if o.Key == "" {
		return errors.New("a durable send to another node needs its key")
	}
	if retry < 0 {
		return fmt.Errorf("a retry numbered %d", retry)
	}
	data, err := json.Marshal(wire.Mail{V: wire.MailVersion, Order: o, Retry: retry})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if _, err := b.mailStream(ctx); err != nil {
		return fmt.Errorf("mail stream %s: %w", MailStream, b.refused(err))
	}
	msg := nats.NewMsg(InboxSubject(to, from))
	msg.Data = data
	id := from + "\x00" + strconv.Quote(o.Key)
	if retry > 0 {
		id += "\x00" + strconv.Itoa(retry)
	}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	if _, err := b.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("put the message in node %s's mail: %w", to, err)
	}
	return nil
}

// Mailbox is a node's outbox as its mail reaches it (the service's).
type Mailbox interface {
	// Take keeps o, node sender's durable send, in the outbox, once per
	// sender and key, decided by the trust policy as from node:SENDER (a
	// hold keeps it awaiting approval). nil once it is stored (or was: the
	// same key, also with another text: a receipt for the key is the
	// first message's, so none is sent); a *domain.Refusal when it never
	// will be (denied, a text refused: answered with that refusal's receipt);
	// any other error when it could not be stored now (taken again later).
	// retry above 0 is the sender's outbox retry number retry of it: a
	// message of that key is retried, once per number.
	Take(ctx context.Context, sender string, o wire.SendOrder, retry int) error
	// MailChanges are the receipts of the messages taken from the bus
	// whose state changed after change number after (0: all), and the
	// number to ask after next time.
	MailChanges(ctx context.Context, after int64) (receipts []wire.MailReceipt, next int64, err error)
	// Published is the change number up to which every receipt was
	// published (0: none), as SetPublished last kept it, across restarts.
	Published(ctx context.Context) (int64, error)
	// SetPublished keeps upTo as Published.
	SetPublished(ctx context.Context, upTo int64) error
}

// refusedReceipt is the receipt of mail that was never stored: refused,
// with the refusal's words.
func refusedReceipt(key string, err error, now time.Time) wire.MailReceipt {
	at := wire.RFC3339(now)
	why := err.Error()
	return wire.MailReceipt{V: wire.MailVersion, Key: []byte(key), State: domain.OutboxRefused.String(), Reason: why, UpdatedAt: at,
		History: []wire.OutboxEvent{{At: at, State: domain.OutboxRefused.String(), Reason: why}}}
}

// TakeMail takes node's mail into box until ctx ends or stop is called:
// each message is acknowledged only once box has stored it (a service
// that dies before its ack gets it again, and its key finds the message
// stored), or when box refuses it for good (its sender gets the refusal
// as a receipt); one box could not store now is delivered again after
// mailRetry. Mail that is not this build's, or without a key, is dropped
// (terminated) with a line to logf. Meanwhile the receipts of every
// message taken from the bus (box.MailChanges) are published to their
// senders, each change once it happens (looked for every poll, and at
// once after a take), from where the last run left them (box.Published:
// a restart publishes only what changed after the receipts that went
// out, a change whose publish a crash interrupted among them). stop waits
// for both.
func (b *Bus) TakeMail(ctx context.Context, node string, box Mailbox, poll time.Duration, logf func(string)) (stop func(), err error) {
	c, err := b.mailConsumer(ctx, node, InboxConsumer(node), InboxSubject(node, "*"))
	if err != nil {
		return nil, err
	}
	ctx, stopAll := context.WithCancel(ctx)
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	refused := make(chan wire.MailReceipt, maxAnswering)
	cc, err := c.Consume(func(m jetstream.Msg) {
		sender, err := untoken(m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:])
		var mail wire.Mail
		switch {
		case err != nil:
			err = fmt.Errorf("mail from %w", err)
		case len(m.Data()) > wire.MaxMailBytes:
			err = fmt.Errorf("mail of %d bytes, over %d", len(m.Data()), wire.MaxMailBytes)
		default:
			if err = json.Unmarshal(m.Data(), &mail); err == nil && mail.V != wire.MailVersion {
				err = fmt.Errorf("mail of version %d; this peerctl reads %d (run the same build on every node)", mail.V, wire.MailVersion)
			} else if err == nil && (mail.Order.Key == "" || mail.Order.Durable <= 0) {
				err = errors.New("mail without its key or its time to live")
			} else if err == nil && mail.Retry < 0 {
				err = fmt.Errorf("mail of retry %d", mail.Retry)
			}
		}
		if err != nil {
			logf(fmt.Sprintf("mail on %s dropped: %s", m.Subject(), wire.Safe(err.Error())))
			_ = m.Term()
			return
		}
		err = box.Take(ctx, sender, mail.Order, mail.Retry)
		if _, final := domain.AsRefusal(err); err != nil && !final {
			logf(fmt.Sprintf("mail from node %s not stored now (taken again in %s): %s", sender, mailRetry, wire.Safe(err.Error())))
			_ = m.NakWithDelay(mailRetry)
			return
		}
		if err != nil {
			r := refusedReceipt(mail.Order.Key, err, time.Now())
			r.To = sender
			select {
			case refused <- r:
			case <-ctx.Done():
				return
			}
		}
		// Acknowledged even when the service is stopping: it is stored.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
		defer cancel()
		if err := m.DoubleAck(actx); err != nil {
			logf(fmt.Sprintf("mail from node %s stored, its ack lost (it comes again, and is found stored): %s", sender, wire.Safe(err.Error())))
		}
		poke()
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			logf(fmt.Sprintf("node %s's mail: %s", node, wire.Safe(err.Error())))
		}
	}))
	if err != nil {
		stopAll()
		return nil, fmt.Errorf("take node %s's mail: %w", node, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.publishReceipts(ctx, node, box, poll, wake, refused, logf)
	}()
	return func() {
		cc.Stop()
		select { // what it was given is taken (and acknowledged) first
		case <-cc.Closed():
		case <-time.After(b.timeout):
		}
		stopAll()
		<-done
	}, nil
}

// publishReceipts publishes, until ctx ends, the receipts box.MailChanges
// gives (every poll, or when woken) after box.Published, and the
// refusals sent on refused, each to its sender's receipts subject, from
// node. A change that could not be published is tried again (its number
// is not passed); once a batch is out, its number is kept
// (box.SetPublished). A mark that cannot be read publishes every receipt
// again (idempotent: each change is recorded once by its sender).
func (b *Bus) publishReceipts(ctx context.Context, node string, box Mailbox, poll time.Duration, wake <-chan struct{}, refused <-chan wire.MailReceipt, logf func(string)) {
	after, err := box.Published(ctx)
	if err != nil {
		logf(fmt.Sprintf("the receipts' mark cannot be read (every receipt is published again): %s", wire.Safe(err.Error())))
		after = 0
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	failing := false
	for {
		rs, next, err := box.MailChanges(ctx, after)
		if err == nil {
			for _, r := range rs {
				if err = b.publishReceipt(ctx, node, r); err != nil {
					break
				}
			}
		}
		if err == nil && next != after {
			err = box.SetPublished(ctx, next)
		}
		switch {
		case err == nil:
			after, failing = next, false
		case ctx.Err() != nil:
			return
		case !failing:
			logf(fmt.Sprintf("receipts to other nodes wait: %s", wire.Safe(err.Error())))
			failing = true
		}
		select {
		case <-ctx.Done():
			return
		case r := <-refused:
			if err := b.publishReceipt(ctx, node, r); err != nil {
				logf(fmt.Sprintf("a refusal's receipt to node %s is lost: %s", r.To, wire.Safe(err.Error())))
			}
		case <-wake:
		case <-t.C:
		}
	}
}

// publishReceipt publishes r to its sender (r.To) from node, stored by
// the servers (a publish ack); its Nats-Msg-Id names its message and
// state, so a change published twice within the window is stored once.
func (b *Bus) publishReceipt(ctx context.Context, node string, r wire.MailReceipt) error {
	r.V = wire.MailVersion
	if len(r.History) > wire.MaxMailHistory {
		r.History = r.History[len(r.History)-wire.MaxMailHistory:]
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	msg := nats.NewMsg(ReceiptsSubject(r.To, node))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%d\x00%q\x00%s\x00%d\x00%s", r.ID, r.Key, r.State, len(r.History), r.UpdatedAt))
	_, err = b.js.PublishMsg(ctx, msg)
	return err
}

// TakeReceipts reads the receipts for node (its sent mail's states on
// the nodes that took it) until ctx ends or stop is called: each read
// with ReadMailReceipt (bounded, exact keys, known states) and given to
// got with the node that sent it (its subject's), then acknowledged; one
// got could not keep now (an error) comes again after mailRetry. A
// receipt that cannot be read is dropped with a line to logf.
func (b *Bus) TakeReceipts(ctx context.Context, node string, got func(ctx context.Context, from string, r wire.MailReceipt) error, logf func(string)) (stop func(), err error) {
	c, err := b.mailConsumer(ctx, node, ReceiptsConsumer(node), ReceiptsSubject(node, "*"))
	if err != nil {
		return nil, err
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		from, err := untoken(m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:])
		var r wire.MailReceipt
		if err == nil {
			r, err = wire.ReadMailReceipt(m.Data())
		}
		if err != nil {
			logf(fmt.Sprintf("a receipt on %s dropped: %s", m.Subject(), wire.Safe(err.Error())))
			_ = m.Term()
			return
		}
		if err := got(ctx, from, r); err != nil {
			logf(fmt.Sprintf("a receipt from node %s not kept now (read again in %s): %s", from, mailRetry, wire.Safe(err.Error())))
			_ = m.NakWithDelay(mailRetry)
			return
		}
		_ = m.Ack()
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			logf(fmt.Sprintf("node %s's receipts: %s", node, wire.Safe(err.Error())))
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("take node %s's receipts: %w", node, err)
	}
	return cc.Stop, nil
}

// mailConsumer is node's durable consumer name of MailStream (made when
// missing), filtered to filter: explicit acks, mailAckWait, at most
// maxAnswering unacknowledged at once.
func (b *Bus) mailConsumer(ctx context.Context, node, name, filter string) (jetstream.Consumer, error) {
	if _, err := domain.ParseNode(node); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	s, err := b.mailStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("mail stream %s: %w", MailStream, b.refused(err))
	}
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: mailAckWait, MaxAckPending: maxAnswering, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("node %s's consumer %s: %w", node, name, err)
	}
	return c, nil
}
