// Package repeat keeps a sender from sending what Claude Code's receiving
// session would drop as a duplicate: a message identical to the previous
// one from the same sender within 30 s (2.1.328 and 2.1.332 bundles:
// dedupWindowMs 30000; measured on 2.1.332 and 2.1.328: the receiver logs
// "Dropped a peer message from … : identical to the previous message from
// this sender." while the sender was told the send succeeded). The sender
// is a courier process (its uds address) or, for inbox-socket posts, the
// posting process (its pid).
package repeat

import (
	"crypto/sha256"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Window is how long a receiver drops a repeat.
const Window = 30 * time.Second

// Guard remembers, per target socket, the previous text one sender sent
// (its SHA-256) and when. The zero value is ready; it is safe for
// concurrent use.
type Guard struct {
	// Sender names the sender in refusals ("courier", "process").
	Sender string

	mu   sync.Mutex
	last map[string]sent
	now  func() time.Time // time.Now when nil (tests set it)
}

type sent struct {
	sum [sha256.Size]byte
	at  time.Time
}

// Begin checks text against the previous text sent to target's socket.
// A repeat within Window is a delivery_failed refusal (send nothing). Else
// text becomes the previous one at once (so a concurrent identical send is
// refused too), and done must be called once the send is over: done(false)
// when the text never reached the session (nothing was written), which
// restores the one before.
func (g *Guard) Begin(target domain.Session, text string) (done func(reached bool), err error) {
	sock, sum := target.SocketPath(), sha256.Sum256([]byte(text))
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if g.now != nil {
		now = g.now()
	}
	if g.last == nil {
		g.last = map[string]sent{}
	}
	prev, had := g.last[sock]
	if had && prev.sum == sum {
		if ago := now.Sub(prev.at); ago < Window {
			return nil, domain.Refuse(domain.ReasonDeliveryFailed,
				"session %s: the same text as this %s's previous message to it, %s ago; Claude Code drops a message identical to the previous one from the same sender within %s, so nothing was sent: change the text, or send it again in %s",
				target.ID(), g.Sender, ago.Round(time.Millisecond), Window, (Window - ago).Round(time.Second))
		}
	}
	for s, e := range g.last {
		if now.Sub(e.at) >= Window {
			delete(g.last, s)
		}
	}
	g.last[sock] = sent{sum: sum, at: now}
	return func(reached bool) {
		if reached {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if cur, ok := g.last[sock]; ok && cur.sum == sum && cur.at == now {
			if had {
				g.last[sock] = prev
			} else {
				delete(g.last, sock)
			}
		}
	}, nil
}
