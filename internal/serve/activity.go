package serve

import (
	"sync"
	"time"
)

// Activity counts the requests that reach the service other than on its
// socket (other nodes' over the fleet's bus), so --idle-exit waits for
// them as for its own: none running and none begun for the idle time.
// The zero value is ready; a nil one has none.
type Activity struct {
	mu      sync.Mutex
	running int
	last    time.Time
}

// Begin notes a request begun; end, called once, notes it ended.
func (a *Activity) Begin() (end func()) {
	a.note(1)
	var once sync.Once
	return func() { once.Do(func() { a.note(-1) }) }
}

func (a *Activity) note(d int) {
	a.mu.Lock()
	a.running += d
	a.last = time.Now()
	a.mu.Unlock()
}

// idle reports whether no request runs and none began or ended for d.
func (a *Activity) idle(d time.Duration) bool {
	if a == nil {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running == 0 && time.Since(a.last) >= d
}
