package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
)

// box is an outbox as a node's mail reaches it: one message per sender
// and key (as the service's outbox keeps them), each change a receipt.
type box struct {
	mu      sync.Mutex
	takes   int
	stored  map[string]int64 // sender+key -> id
	orders  []wire.SendOrder
	changes []wire.MailReceipt
	// fail, when set, says what Take answers instead (after storing, when
	// storeFirst: a crash between the store and the ack).
	fail       func(n int) error
	storeFirst bool
	// published is the mark the receipts reached (kept across takers).
	published int64
	// retries are each take's retry number, in order.
	retries []int
}

func newBox() *box { return &box{stored: map[string]int64{}} }

func (b *box) Take(_ context.Context, sender string, o wire.SendOrder, retry int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.takes++
	b.retries = append(b.retries, retry)
	var failed error
	if b.fail != nil {
		failed = b.fail(b.takes)
	}
	if failed != nil && !b.storeFirst {
		return failed
	}
	k := sender + "\x00" + o.Key
	if _, ok := b.stored[k]; !ok {
		id := int64(len(b.orders) + 1)
		b.stored[k] = id
		b.orders = append(b.orders, o)
		at := wire.RFC3339(time.Now())
		b.changes = append(b.changes, wire.MailReceipt{To: sender, Key: []byte(o.Key), ID: id, State: "stored", UpdatedAt: at,
			History: []wire.OutboxEvent{{At: at, State: "stored"}}})
	}
	return failed
}

func (b *box) MailChanges(_ context.Context, after int64) ([]wire.MailReceipt, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]wire.MailReceipt(nil), b.changes[after:]...), int64(len(b.changes)), nil
}

func (b *box) Published(context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.published, nil
}

func (b *box) SetPublished(_ context.Context, upTo int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.published = upTo
	return nil
}

// deliver adds a change: message id delivered.
func (b *box) deliver(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.changes {
		if c.ID == id {
			at := wire.RFC3339(time.Now())
			c.State, c.UpdatedAt, c.Outcome, c.MsgID = "delivered", at, "delivered", "msg-7"
			c.History = append(append([]wire.OutboxEvent(nil), c.History...), wire.OutboxEvent{At: at, State: "delivered", Reason: "the harness took it"})
			b.changes = append(b.changes, c)
			return
		}
	}
}

func (b *box) count() (takes, stored int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takes, len(b.orders)
}

// receipts collects the receipts a node gets.
type receipts struct {
	mu  sync.Mutex
	got []string
}

func (r *receipts) take(_ context.Context, from string, m wire.MailReceipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s %s %d %s", from, m.Key, m.ID, m.State))
	return nil
}

func (r *receipts) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func order(key, text string) wire.SendOrder {
	return wire.SendOrder{Query: wire.SendQuery{Address: "api", Text: text}, Durable: time.Hour, Key: key}
}

func takeMail(t *testing.T, b *Bus, node string, x *box) func() {
	t.Helper()
	stop, err := b.TakeMail(context.Background(), node, x, 50*time.Millisecond, func(l string) { t.Log(l) })
	require.NoError(t, err)
	return stop
}

// Mail posted while its node's service is away waits in the stream; the
// service takes each message once, and its sender reads the receipts of
// its states there (stored, then delivered).
func TestMailWaitsForItsNodeAndIsTakenOnce(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k1", "first"), 0))
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k2", "second"), 0))
	require.NoError(t, alpha.PostMail(ctx, "gamma", "alpha", order("k1", "for gamma"), 0))

	x := newBox()
	stop := takeMail(t, beta, "beta.lan", x)
	defer func() { stop() }() // the last one
	require.Eventually(t, func() bool { _, n := x.count(); return n == 2 }, 30*time.Second, 10*time.Millisecond)
	x.mu.Lock()
	assert.Equal(t, "first", x.orders[0].Query.Text)
	assert.Equal(t, "second", x.orders[1].Query.Text)
	assert.Equal(t, time.Hour, x.orders[0].Durable)
	x.mu.Unlock()

	var r receipts
	stopR, err := alpha.TakeReceipts(ctx, "alpha", r.take, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stopR()
	x.deliver(1)
	require.Eventually(t, func() bool { return len(r.all()) == 3 }, 30*time.Second, 10*time.Millisecond)
	assert.ElementsMatch(t, []string{"beta.lan k1 1 stored", "beta.lan k2 2 stored", "beta.lan k1 1 delivered"}, r.all())

	// The same key again within the stream's de-duplication window is
	// not stored again by the stream; after it (no Nats-Msg-Id here), the
	// outbox's key decides: the same message.
	stop()
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k1", "first"), 0))
	again, err := json.Marshal(wire.Mail{V: wire.MailVersion, Order: order("k1", "first")})
	require.NoError(t, err)
	_, err = alpha.js.Publish(ctx, InboxSubject("beta.lan", "alpha"), again)
	require.NoError(t, err)
	stop = takeMail(t, beta, "beta.lan", x)
	require.Eventually(t, func() bool { n, _ := x.count(); return n >= 3 }, pastAckWait, 10*time.Millisecond)
	requireDrained(t, beta, InboxConsumer("beta.lan"))
	takes, n := x.count()
	assert.Equal(t, 3, takes, "the stream stored the repeat within its window once")
	assert.Equal(t, 2, n, "nothing stored twice")
	requireDrained(t, beta, InboxConsumer("beta.lan"))
}

// pastAckWait bounds a wait for mail taken by a consumer started again: a
// pull the stopped one left on the server can still be handed a message
// (seen on a loaded machine), which comes again once mailAckWait has
// passed.
const pastAckWait = mailAckWait + 90*time.Second

// requireDrained waits for consumer to have nothing pending or unacked.
func requireDrained(t *testing.T, b *Bus, consumer string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := b.js.Consumer(context.Background(), MailStream, consumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, 2*time.Minute, 10*time.Millisecond) // past a redelivery's ack wait
}

// A service that stored a message and died before its ack gets it again:
// its key finds it stored, and it is stored once. One that could not
// store it now gets it again, and stores it then.
func TestMailAckedOnlyOnceStored(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	x := newBox()
	x.storeFirst = true
	x.fail = func(n int) error {
		if n == 1 {
			return errors.New("the service died before its ack")
		}
		return nil
	}
	stop := takeMail(t, beta, "beta.lan", x)
	defer func() { stop() }() // the last one
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k1", "once"), 0))
	require.Eventually(t, func() bool { n, _ := x.count(); return n == 2 }, 60*time.Second, 10*time.Millisecond)
	_, n := x.count()
	assert.Equal(t, 1, n)
	requireDrained(t, beta, InboxConsumer("beta.lan"))

	y := newBox()
	y.fail = func(n int) error {
		if n == 1 {
			return errors.New("the outbox cannot be used now")
		}
		return nil
	}
	stop()
	stop = takeMail(t, beta, "beta.lan", y)
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k2", "later"), 0))
	require.Eventually(t, func() bool { _, n := y.count(); return n == 1 }, 60*time.Second, 10*time.Millisecond)
	requireDrained(t, beta, InboxConsumer("beta.lan"))
}

// Mail the service refuses for good (its trust policy denies it) is
// acknowledged, and its sender gets the refusal as a receipt; mail that is
// not this build's is dropped.
func TestMailRefusedIsAnsweredAndBadMailDropped(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	x := newBox()
	x.fail = func(int) error { return domain.Refuse(domain.ReasonNotAllowed, "denied by rule 2") }
	stop := takeMail(t, beta, "beta.lan", x)
	defer stop()
	var r receipts
	stopR, err := alpha.TakeReceipts(ctx, "alpha", r.take, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stopR()
	_, err = alpha.js.Publish(ctx, InboxSubject("beta.lan", "alpha"), []byte(`{"v":99}`))
	require.NoError(t, err)
	_, err = alpha.js.Publish(ctx, InboxSubject("beta.lan", "alpha"), []byte(`not json`))
	require.NoError(t, err)
	require.NoError(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("k9", "no"), 0))
	require.Eventually(t, func() bool { return len(r.all()) == 1 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"beta.lan k9 0 refused"}, r.all())
	takes, n := x.count()
	assert.Equal(t, 1, takes, "the bad mail never reached the outbox")
	assert.Zero(t, n)
	requireDrained(t, beta, InboxConsumer("beta.lan"))
	assert.Error(t, alpha.PostMail(ctx, "beta.lan", "alpha", order("", "no key"), 0))
}

// A receipt that is not this build's, or lies about its state, is
// dropped: the sender's outbox hears only what it can read.
func TestReceiptsAreReadWithTheirRules(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	var r receipts
	stopR, err := alpha.TakeReceipts(ctx, "alpha", r.take, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stopR()
	at := wire.RFC3339(time.Now())
	for _, bad := range []string{
		`{"v":1}`,
		`{"v":1,"key":"azE=","id":1,"state":"exploded","reason":"","outcome":"","transport":"","msgId":"","sessionId":"","updatedAt":"` + at + `","history":[]}`,
		`{"v":1,"key":"azE=","id":1,"state":"stored","reason":"","outcome":"","transport":"","msgId":"","sessionId":"","updatedAt":"` + at + `","history":[],"extra":1}`,
	} {
		_, err := beta.js.Publish(ctx, ReceiptsSubject("alpha", "beta.lan"), []byte(bad))
		require.NoError(t, err)
	}
	require.NoError(t, beta.publishReceipt(ctx, "beta.lan", wire.MailReceipt{To: "alpha", Key: []byte("k1"), ID: 3, State: "replied", UpdatedAt: at}))
	require.Eventually(t, func() bool { return len(r.all()) == 1 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"beta.lan k1 3 replied"}, r.all())
	requireDrained(t, alpha, ReceiptsConsumer("alpha"))
}

// With per-node credentials (ServerConfig), a node puts mail in another's
// inbox and reads its receipts, and cannot read another node's mail or
// receipts, nor put mail in as another node.
func TestOneNodesCredentialsCannotReadAnothersMail(t *testing.T) {
	url, keys := fleetServer(t, "alpha", "beta.lan", "gamma")
	ctx := context.Background()
	alpha, alphaSaw := connectAs(t, url, keys, "alpha")
	beta, _ := connectAs(t, url, keys, "beta.lan")
	gamma, _ := connectAs(t, url, keys, "gamma")

	x := newBox()
	stop := takeMail(t, beta, "beta.lan", x)
	defer stop()
	var r receipts
	stopR, err := gamma.TakeReceipts(ctx, "gamma", r.take, func(l string) { t.Log(l) })
	require.NoError(t, err)
	defer stopR()
	require.NoError(t, gamma.PostMail(ctx, "beta.lan", "gamma", order("k1", "secret plan"), 0))
	require.Eventually(t, func() bool { return len(r.all()) == 1 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"beta.lan k1 1 stored"}, r.all())
	stop()

	// gamma posts again while beta is away: alpha cannot take it, by
	// beta's consumer or one of its own on beta's inbox, nor read gamma's
	// receipts, nor get the stream's messages.
	require.NoError(t, gamma.PostMail(ctx, "beta.lan", "gamma", order("k2", "second secret"), 0))
	_, err = alpha.TakeMail(ctx, "beta.lan", newBox(), time.Second, func(string) {})
	assert.Error(t, err, "beta's consumer")
	s, err := alpha.js.Stream(ctx, MailStream)
	require.NoError(t, err)
	_, err = s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: InboxConsumer("alpha"), FilterSubject: InboxSubject("beta.lan", "*")})
	assert.Error(t, err, "alpha's consumer on beta's inbox")
	_, err = s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "spy", FilterSubject: ">"})
	assert.Error(t, err, "a consumer of its own name")
	_, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{InboxSubject("beta.lan", "*")}})
	if err == nil {
		t.Error("an ordered consumer on beta's inbox")
	}
	_, err = s.GetLastMsgForSubject(ctx, InboxSubject("beta.lan", "gamma"))
	assert.Error(t, err, "a message get")
	_, err = alpha.TakeReceipts(ctx, "gamma", (&receipts{}).take, func(string) {})
	assert.Error(t, err, "gamma's receipts")
	assert.Error(t, alpha.PostMail(ctx, "beta.lan", "gamma", order("k3", "forged"), 0), "mail as gamma")
	require.NoError(t, alpha.nc.Flush())
	assert.True(t, alphaSaw.saw(`Publish to "peerctl.v1.inbox.beta~lan.gamma"`))

	// beta, back, takes gamma's second message only.
	y := newBox()
	stop = takeMail(t, beta, "beta.lan", y)
	defer stop()
	require.Eventually(t, func() bool { _, n := y.count(); return n == 1 }, pastAckWait, 10*time.Millisecond)
	requireDrained(t, beta, InboxConsumer("beta.lan"))
	assert.Equal(t, "second secret", y.orders[0].Query.Text)
}

// A service started again publishes only the receipts that did not go
// out: none for the messages whose receipts were published, the change
// made while it was down (a crash between a change and its publish).
func TestAServiceStartedAgainPublishesOnlyWhatDidNotGoOut(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	var mu sync.Mutex
	var published []string // every publish, as core NATS carries it (the stream's de-duplication aside)
	sub, err := alpha.nc.Subscribe(ReceiptsSubject("alpha", "*"), func(m *nats.Msg) {
		r, err := wire.ReadMailReceipt(m.Data)
		require.NoError(t, err)
		mu.Lock()
		published = append(published, fmt.Sprintf("%s %d", r.Key, r.ID)+" "+r.State)
		mu.Unlock()
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	seen := func() []string {
		require.NoError(t, alpha.nc.Flush())
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), published...)
	}

	x := newBox()
	stop := takeMail(t, beta, "beta", x)
	require.NoError(t, alpha.PostMail(ctx, "beta", "alpha", order("k1", "first"), 0))
	require.Eventually(t, func() bool { return len(seen()) == 1 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, alpha.PostMail(ctx, "beta", "alpha", order("k2", "second"), 0))
	require.Eventually(t, func() bool { return len(seen()) == 2 }, 30*time.Second, 10*time.Millisecond)
	x.deliver(1)
	require.Eventually(t, func() bool { return len(seen()) == 3 }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { p, _ := x.Published(ctx); return p == 3 }, 30*time.Second, 10*time.Millisecond, "the mark kept")
	stop()

	x.deliver(2) // changed while no receipt could go out
	stop = takeMail(t, beta, "beta", x)
	defer stop()
	// The start publishes its first batch in order: anything published
	// again would come before the change that did not go out.
	require.Eventually(t, func() bool { return slices.Contains(seen(), "k2 2 delivered") }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"k1 1 stored", "k2 2 stored", "k1 1 delivered", "k2 2 delivered"}, seen())
}

// The sender's outbox retry posts the message again, numbered: each
// number reaches the node's outbox (the stream's de-duplication keeps a
// repeat of one number out, not a new number).
func TestARetryIsPostedAgainANumberOnce(t *testing.T) {
	url := natstest.Start(t)
	ctx := context.Background()
	alpha, beta := connect(t, url), connect(t, url)
	for _, retry := range []int{0, 0, 1, 1, 2} {
		require.NoError(t, alpha.PostMail(ctx, "beta", "alpha", order("k1", "again"), retry))
	}
	require.Error(t, alpha.PostMail(ctx, "beta", "alpha", order("k1", "again"), -1))
	x := newBox()
	stop := takeMail(t, beta, "beta", x)
	defer stop()
	requireDrained(t, beta, InboxConsumer("beta"))
	require.Eventually(t, func() bool { n, _ := x.count(); return n == 3 }, 30*time.Second, 10*time.Millisecond)
	x.mu.Lock()
	defer x.mu.Unlock()
	assert.Equal(t, []int{0, 1, 2}, x.retries)
}
