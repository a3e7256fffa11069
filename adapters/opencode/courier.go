package opencode

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Bounds of a courier: the messages whose answers it waits for at once,
// and the bytes of one answer it keeps.
const (
	maxPending   = 64
	maxReplyText = 1 << 20
)

// StartCourier starts one courier: each Send posts as Deliver does on an
// event stream kept open per server for the courier's life, and when the
// assistant message answering it (parentID: peerctl's message id) is
// complete, its text parts arrive on Inbound as the session's reply
// (From: the session id, FromName: its title). ctx bounds the courier's
// whole life.
func (t *Prompt) StartCourier(ctx context.Context) (ports.Courier, error) {
	cctx, cancel := context.WithCancel(ctx)
	k := &courier{cfg: t.cfg, prompt: t, ctx: cctx, cancel: cancel, inbound: make(chan domain.Inbound, 16),
		notices: make(chan domain.Notice), done: make(chan struct{}), streams: map[string]*stream{}}
	go func() {
		<-cctx.Done()
		k.wg.Wait()
		close(k.inbound)
		close(k.notices)
		close(k.done)
	}()
	return k, nil
}

// courier is ports.Courier over opencode event streams.
type courier struct {
	cfg     Config
	prompt  *Prompt // its client: the one the registry's read kept, or new
	ctx     context.Context
	cancel  context.CancelFunc
	inbound chan domain.Inbound
	notices chan domain.Notice
	done    chan struct{}
	wg      sync.WaitGroup

	sends   sync.Mutex // one Send at a time
	mu      sync.Mutex
	streams map[string]*stream // by server process and address (serverKey)
}

// stream is one server's event stream and what the courier waits for on
// it.
type stream struct {
	key, addr string // serverKey; the server's address
	client    *Client
	cancel    context.CancelFunc // ends the stream
	feed      chan Event         // the running Send's copy ("nil": none)
	errc      <-chan error
	ended     chan struct{}
	// mine: message ids peerctl posted → session id and name.
	mine map[string]sender
	// answers: assistant message id → the answer being written.
	answers map[string]*answer
}

type sender struct{ session, name string }

// answer is an assistant message being written: its text parts by id, and
// the order they first came in.
type answer struct {
	parts map[string]string
	order []string
}

// Send posts msg on the target server's stream (see Deliver). Calls are
// serialized.
func (k *courier) Send(ctx context.Context, target domain.Session, msg domain.Message) (domain.Receipt, error) {
	k.sends.Lock()
	defer k.sends.Unlock()
	if err := check(target); err != nil {
		return domain.Receipt{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
	defer cancel()
	s, err := k.stream(target)
	if err != nil {
		return domain.Receipt{}, unsent(target, err)
	}
	feed := make(chan Event, 256)
	k.mu.Lock()
	s.feed = feed
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		s.feed = nil
		k.mu.Unlock()
	}()
	name := target.Name()
	if name == "" {
		name = target.ID()
	}
	rec, id, err := post(ctx, k.cfg, s.client, feed, s.errc, target, msg, func(id string) {
		k.mu.Lock()
		if len(s.mine) < maxPending {
			s.mine[id] = sender{session: target.ID(), name: name}
		}
		k.mu.Unlock()
	})
	if err != nil {
		k.mu.Lock()
		delete(s.mine, id)
		k.mu.Unlock()
	}
	return rec, err
}

// stream returns the open stream of target's server process (its pid,
// start and address: the process the send's fresh read resolved and
// verified), opening it when there is none or the last one ended. A
// stream of another process at that address (a server that went away and
// was started again) is closed: nothing is posted on a connection proved
// for another process.
func (k *courier) stream(target domain.Session) (*stream, error) {
	key := serverKey(target.PID(), target.Record().ProcStart, target.SocketPath())
	k.mu.Lock()
	s := k.streams[key]
	k.mu.Unlock()
	if s != nil {
		select {
		case <-s.ended:
		default:
			return s, nil
		}
	}
	sctx, cancel := context.WithCancel(k.ctx)
	c, events, errc, err := k.prompt.open(sctx, target)
	if err != nil {
		cancel()
		return nil, err
	}
	if k.ctx.Err() != nil {
		cancel()
		c.Close()
		return nil, k.ctx.Err()
	}
	s = &stream{key: key, addr: target.SocketPath(), client: c, cancel: cancel, errc: errc, ended: make(chan struct{}), mine: map[string]sender{}, answers: map[string]*answer{}}
	k.mu.Lock()
	for _, old := range k.streams {
		if old.addr == s.addr {
			old.cancel()
		}
	}
	k.streams[key] = s
	k.mu.Unlock()
	k.wg.Add(1)
	go k.listen(s, events)
	return s, nil
}

// Streams is how many event streams the courier has open now (each
// server's it sent to, while the server lives).
func (k *courier) Streams() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.streams)
}

// listen reads one stream until it ends: it copies each event to the
// running send and turns each completed answer to a message of ours into
// its reply.
func (k *courier) listen(s *stream, events <-chan Event) {
	defer k.wg.Done()
	defer close(s.ended)
	defer s.client.Close()
	defer func() {
		k.mu.Lock()
		if k.streams[s.key] == s {
			delete(k.streams, s.key)
		}
		k.mu.Unlock()
		s.cancel()
	}()
	for ev := range events {
		k.mu.Lock()
		if s.feed != nil {
			select {
			case s.feed <- ev:
			default:
			}
		}
		in, ok := k.track(s, ev)
		k.mu.Unlock()
		if !ok {
			continue
		}
		select {
		case k.inbound <- in:
		case <-k.ctx.Done():
			return
		}
	}
}

// track follows the answers to messages of ours on s (k.mu held); ok
// when ev completed one, with its reply.
func (k *courier) track(s *stream, ev Event) (domain.Inbound, bool) {
	switch ev.Type {
	case "message.part.updated":
		p, ok := partOf(ev)
		if !ok || p.Type != "text" {
			return domain.Inbound{}, false
		}
		if a := s.answers[p.MessageID]; a != nil {
			if _, seen := a.parts[p.ID]; !seen {
				a.order = append(a.order, p.ID)
			}
			a.parts[p.ID] = p.Text
		}
	case "message.updated":
		m, ok := messageOf(ev)
		if !ok || m.Role != "assistant" {
			return domain.Inbound{}, false
		}
		from, mine := s.mine[m.ParentID]
		if !mine {
			return domain.Inbound{}, false
		}
		a := s.answers[m.ID]
		if a == nil {
			if len(s.answers) >= maxPending {
				return domain.Inbound{}, false
			}
			a = &answer{parts: map[string]string{}}
			s.answers[m.ID] = a
		}
		if m.Time.Completed == 0 && m.Error == nil || m.Finish == "tool-calls" {
			return domain.Inbound{}, false
		}
		delete(s.answers, m.ID)
		delete(s.mine, m.ParentID)
		text := a.text()
		if m.Error != nil && text == "" {
			text = "[the turn ended with an error: " + oneLine(m.Error.Name+": "+m.Error.Data.Message) + "]"
		}
		return domain.NewInbound(from.session, from.name, text, time.Now()), true
	}
	return domain.Inbound{}, false
}

// text joins the answer's text parts in the order they first came, at
// most maxReplyText bytes.
func (a *answer) text() string {
	var b strings.Builder
	for _, id := range a.order {
		t := a.parts[id]
		if b.Len()+len(t) > maxReplyText {
			t = strings.ToValidUTF8(t[:max(0, maxReplyText-b.Len())], "")
		}
		b.WriteString(t)
	}
	return b.String()
}

func (k *courier) Inbound() <-chan domain.Inbound { return k.inbound }
func (k *courier) Notices() <-chan domain.Notice  { return k.notices }
func (k *courier) Done() <-chan struct{}          { return k.done }

// Close ends every stream and the listeners; safe to call more than once.
func (k *courier) Close() error {
	k.cancel()
	<-k.done
	return nil
}
