package codex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// memoHold is how long a daemon that did not answer within its bound is
// taken not to answer: one command asks it once, a long-lived one (mcp,
// relay) asks again after this.
const memoHold = 30 * time.Second

// daemonMemo remembers that the home's daemon did not answer within the
// bound (DefaultAsk), for memoHold, so that one send pays the bound once
// (a send reads the registry, may read it again and look among the known
// threads: three asks, 3 s each, before). It is shared by a harness's
// registry and transports; the zero value is ready, nil remembers nothing.
type daemonMemo struct {
	mu  sync.Mutex
	err error
	at  time.Time
	now func() time.Time // time.Now when nil (tests set it)
}

func (m *daemonMemo) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// recall is the remembered failure, nil when there is none (or it is
// older than memoHold).
func (m *daemonMemo) recall() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil || m.clock().Sub(m.at) > memoHold {
		m.err = nil
		return nil
	}
	return fmt.Errorf("%w (it did not answer %s ago; not asked again for %s)", m.err, m.clock().Sub(m.at).Round(time.Millisecond), memoHold)
}

// remember keeps err when it says the daemon did not answer within its
// own bound (not when the caller's ctx ended: an interrupt says nothing
// about the daemon).
func (m *daemonMemo) remember(ctx context.Context, err error) {
	if m == nil || err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err, m.at = err, m.clock()
}
