package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports/wire"
)

// warmSet is one set of warm couriers and how many sends hold it.
type warmSet struct {
	w    *app.Warm
	uses int       // sends running with it now
	last time.Time // when the last of them ended
}

// maxIdleWarm is how many sets of warm couriers no send uses the service
// keeps, the most recently used: each holds a running courier (a Claude
// Code process), and each distinct set of settings (harness flags, sender
// name, timeout) has its own. warmIdle is how long an unused set is kept
// at most.
const (
	maxIdleWarm = 4
	warmIdle    = 15 * time.Minute
)

// warmKey names the settings a courier is started with, so that a send is
// handed only to a courier its own settings would have started.
func warmKey(set wire.Settings, q wire.SendQuery, window time.Duration) string {
	h := sha256.New()
	names := make([]string, 0, len(set.Flags))
	for k := range set.Flags {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(h, "flag %s=%s\x00", k, set.Flags[k])
	}
	fmt.Fprintf(h, "from %s\x00timeout %s\x00window %s", q.From, q.Timeout, window)
	return hex.EncodeToString(h.Sum(nil))
}

// warmFor returns the warm couriers for key, held until the returned
// release runs (then the sets no send needs any more are trimmed).
func (s *Server) warmFor(key string) (*app.Warm, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.warm[key]
	if ws == nil {
		ws = &warmSet{w: app.NewWarm(s.life)}
		s.warm[key] = ws
	}
	ws.uses++
	return ws.w, func() { s.letGo(key, time.Now()) }
}

// letGo lets go, at now, of the warm couriers of key, and trims.
func (s *Server) letGo(key string, now time.Time) {
	s.mu.Lock()
	if ws := s.warm[key]; ws != nil {
		ws.uses--
		ws.last = now
	}
	s.mu.Unlock()
	s.trimWarm(now)
}

// trimWarm closes the sets of warm couriers no send uses that were last
// used more than warmIdle before now, and the oldest of the others beyond
// maxIdleWarm.
func (s *Server) trimWarm(now time.Time) {
	s.mu.Lock()
	var idle []string
	for key, ws := range s.warm {
		if ws.uses == 0 {
			idle = append(idle, key)
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return s.warm[b].last.Compare(s.warm[a].last) }) // newest first
	var gone []*app.Warm
	for i, key := range idle {
		if ws := s.warm[key]; i >= maxIdleWarm || now.Sub(ws.last) > warmIdle {
			gone = append(gone, ws.w)
			delete(s.warm, key)
		}
	}
	s.mu.Unlock()
	for _, w := range gone {
		_ = w.Close()
	}
}

func (s *Server) closeWarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.warm {
		_ = ws.w.Close()
	}
}
