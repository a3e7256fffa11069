package serve

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Status is how a service stands: serve status --json (docs/OUTPUT.md)
// and the service's answer to ping and stop.
type Status struct {
	// Running is false when no service answers on the state folder's
	// socket (serve status exits 3 then).
	Running bool `json:"running"`
	// PID is the service's (0 when none runs); Version its peerctl's.
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// StateDir is the state folder the service serves, Socket the socket
	// it listens on, Outbox its database file and OutboxError why durable
	// sends are refused ("" when they are not).
	StateDir    string `json:"stateDir"`
	Socket      string `json:"socket"`
	Outbox      string `json:"outbox"`
	OutboxError string `json:"outboxError"`
	// StartedAt is when it started (RFC 3339 UTC, "" when none runs),
	// UptimeSeconds how long it has run.
	StartedAt     string `json:"startedAt"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	// IdleExitSeconds is its --idle-exit in seconds (0: it never ends on
	// its own).
	IdleExitSeconds int64 `json:"idleExitSeconds"`
	// RetentionSeconds is its --retention in seconds: how long a finished
	// message is kept after its last change before it is pruned (0: every
	// one is kept; 0 too when none runs).
	RetentionSeconds int64 `json:"retentionSeconds"`
	// Messages counts the outbox's messages by state: every state word,
	// 0 for none.
	Messages map[string]int `json:"messages"`
	// Warm is its warm couriers.
	Warm Warm `json:"warm"`
	// Bus is its place on the fleet's bus (null: none configured).
	Bus *BusStatus `json:"bus"`
}

// Warm is a service's warm couriers: Sets is how many sets of couriers it
// keeps (one per distinct settings: harness flags, sender, timeout; each
// starts at most one courier per harness), InUse how many a send uses
// now, Started how many couriers they have started since the service
// began.
type Warm struct {
	Sets    int `json:"sets"`
	InUse   int `json:"inUse"`
	Started int `json:"started"`
}

// status is how s stands now.
func (s *Server) status() *Status {
	now := time.Now()
	p := s.o.Paths
	st := &Status{Running: true, PID: os.Getpid(), Version: s.o.Build, StateDir: p.StateDir, Socket: p.Socket,
		Outbox: p.DB, StartedAt: wire.RFC3339(s.started), UptimeSeconds: int64(now.Sub(s.started).Seconds()),
		IdleExitSeconds: int64(s.o.IdleExit.Seconds()), RetentionSeconds: int64(s.o.Retention.Seconds()), Messages: MessageCounts(nil), Bus: s.o.Bus.status()}
	switch {
	case s.storeErr != nil:
		st.OutboxError = s.storeErr.Error()
	case s.store != nil:
		if n, err := s.store.Counts(s.life); err == nil {
			st.Messages = MessageCounts(n)
		} else {
			st.OutboxError = err.Error()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.warm {
		st.Warm.Sets++
		if ws.uses > 0 {
			st.Warm.InUse++
		}
		st.Warm.Started += ws.w.Starts()
	}
	return st
}

// MessageCounts is n by state word, every state present.
func MessageCounts(n map[domain.OutboxState]int) map[string]int {
	out := map[string]int{}
	for _, st := range domain.OutboxStates() {
		out[st.String()] = n[st]
	}
	return out
}

// errStopAsked is the cause of a stop serve stop asked for.
var errStopAsked = errors.New("peerctl serve stop asked it to")

// stopAsked answers a stop request on conn with the service's status and
// ends the service; conn's other end sees its end (end of file) once the
// service has ended and freed its lock (end.finish).
func (s *Server) stopAsked(conn *net.UnixConn) {
	if f, err := conn.File(); err == nil { // a copy, open until the end
		s.ended.hold(f)
	}
	_ = WriteLine(conn, Answer{Done: true, PID: os.Getpid(), Status: s.status()})
	s.stop(errStopAsked)
}

// end is the end of a service: it logs why it stops and that it stopped,
// and holds the connections of serve stop until then.
type end struct {
	mu   sync.Mutex
	held []*os.File
}

func (e *end) hold(f *os.File) {
	e.mu.Lock()
	e.held = append(e.held, f)
	e.mu.Unlock()
}

// stopping logs that the service stops and why.
func (e *end) stopping(log io.Writer, why error) {
	fmt.Fprintf(log, "peerctl serve: stopping (pid %d): %s\n", os.Getpid(), wire.Safe(why.Error()))
}

// finish logs the end and lets the serve stop connections go.
func (e *end) finish(log io.Writer) {
	fmt.Fprintf(log, "peerctl serve: stopped (pid %d)\n", os.Getpid())
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.held {
		_ = f.Close()
	}
	e.held = nil
}
