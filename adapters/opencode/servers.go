package opencode

import (
	"strconv"
	"sync"
)

// servers are the clients of the servers the last registry read found,
// each with the keep-alive connection that read proved the server's and
// used (health, sessions, status), so that a send that follows the read
// (as every send does: it resolves its target on a fresh read) reuses
// that connection instead of dialling and proving another. A client is
// kept by the server process (pid and start) and address it was proved
// for: a send to another process or address never takes it. Safe for
// concurrent use; the zero value keeps nothing until set.
type servers struct {
	mu sync.Mutex
	m  map[string]*Client
}

// serverKey names a server process (pid, start ticks) at an address.
func serverKey(pid int, start, addr string) string {
	return strconv.Itoa(pid) + "/" + start + "@" + addr
}

// replace keeps found (by serverKey) in place of the last read's
// clients, closing those not taken.
func (s *servers) replace(found map[string]*Client) {
	s.mu.Lock()
	old := s.m
	s.m = found
	s.mu.Unlock()
	for k, c := range old {
		if found[k] != c {
			c.Close()
		}
	}
}

// take hands over the client kept for key (the caller closes it), or nil.
func (s *servers) take(key string) *Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.m[key]
	delete(s.m, key)
	return c
}
