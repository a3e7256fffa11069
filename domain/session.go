package domain

import (
	"errors"
	"time"
)

// ErrNotLiveEntry is returned by NewSession for an entry whose verdict is not live.
var ErrNotLiveEntry = errors.New("entry is not a live session")

// Session is a live session of a harness (Claude Code or Qwen Code): a
// registry record that passed the liveness rule. It is an opaque value; build it with NewSession.
type Session struct {
	rec         Record
	addressable bool
	why         string
	dormant     bool
}

// NewSession builds a Session from a live entry; other verdicts fail with
// ErrNotLiveEntry.
func NewSession(e Entry) (Session, error) {
	if !e.Live() {
		return Session{}, ErrNotLiveEntry
	}
	return Session{rec: e.Record, addressable: e.Addressable, why: e.Unaddressable}, nil
}

// NewDormantSession builds the Session of a record its harness knows but
// no process has open now (a Codex thread no client has open): only a
// durable transport (ports.DurableTransport) is given one, to keep the
// message for when the session is opened again.
func NewDormantSession(rec Record) Session {
	return Session{rec: rec, addressable: true, dormant: true}
}

// Dormant reports that no process has the session open now
// (NewDormantSession).
func (s Session) Dormant() bool { return s.dormant }

// PID is the session's process id.
func (s Session) PID() int { return s.rec.PID }

// ID is the session id (a UUID), "" if the record had none.
func (s Session) ID() string { return s.rec.SessionID }

// Name is the session's current name.
func (s Session) Name() string { return s.rec.Name }

// NameSource is "derived" or "user" ("" when absent).
func (s Session) NameSource() string { return s.rec.NameSource }

// Cwd is the session's working directory.
func (s Session) Cwd() string { return s.rec.Cwd }

// SocketPath is the messaging (inbox) socket path, "" when not published.
func (s Session) SocketPath() string { return s.rec.SocketPath }

// Status is idle, busy, waiting or unknown.
func (s Session) Status() Status { return s.rec.Status }

// WaitingFor is what a waiting session waits on (Record.WaitingFor).
func (s Session) WaitingFor() string { return s.rec.WaitingFor }

// Kind is the record's kind ("interactive").
func (s Session) Kind() string { return s.rec.Kind }

// Version is the Claude Code version that wrote the record.
func (s Session) Version() string { return s.rec.Version }

// StartedAt is when the session started (from epoch milliseconds).
func (s Session) StartedAt() time.Time { return s.rec.StartedAt }

// UpdatedAt is when the record was last updated (from epoch milliseconds).
func (s Session) UpdatedAt() time.Time { return s.rec.UpdatedAt }

// ProcStart is the recorded process start, clock ticks since boot, as text.
func (s Session) ProcStart() string { return s.rec.ProcStart }

// PIDDomain is the recorded pid domain ("" when absent).
func (s Session) PIDDomain() string { return s.rec.PIDDomain }

// Tmux is the recorded tmux pane, "<session>:@<window>.%<pane>".
func (s Session) Tmux() string { return s.rec.Tmux }

// PeerProtocol is the record's peer protocol version (0 when absent).
func (s Session) PeerProtocol() int { return s.rec.PeerProtocol }

// Label names the session in a message (Record.Label): never an empty
// id.
func (s Session) Label() string { return s.rec.Label() }

// Record returns a copy of the underlying record.
func (s Session) Record() Record { return s.rec }

// Addressable reports whether the session can receive messages; if not,
// Unaddressable says why.
func (s Session) Addressable() bool { return s.addressable }

// Unaddressable says why the session cannot receive messages ("" if it can).
func (s Session) Unaddressable() string { return s.why }

// Endpoint returns the session's endpoint (zero when not addressable).
func (s Session) Endpoint() Endpoint {
	if !s.addressable {
		return Endpoint{}
	}
	ep, err := endpointFor(s.rec)
	if err != nil {
		return Endpoint{}
	}
	return ep
}
