package domain

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// MinIDPrefix is the shortest session-id prefix accepted as an address.
const MinIDPrefix = 6

// ErrBadAddress is wrapped when an address is malformed (empty, or a bad
// endpoint); it is a usage error, not a refusal.
var ErrBadAddress = errors.New("bad address")

// Resolve finds the one live session an address names, among the entries of
// a single registry read, and verifies its identity. An address is, in order
// of precedence:
//
//   - an endpoint "cc-peer:v1:<pid>:<name>:<socket>": the pid's live record
//     must still carry that name and socket;
//   - a full session id;
//   - an exact session name or a unique session-id prefix of at least
//     MinIDPrefix characters (a name and a prefix naming two different
//     sessions is ambiguous).
//
// Refusals: ReasonNotLive when nothing live matches (the detail says when a
// stale record matched, and that the transcript may still exist);
// ReasonIdentityMismatch with every candidate when the address is ambiguous,
// when the session's name also belongs to another live session, or when an
// endpoint's name or socket no longer match. A malformed address returns an
// error wrapping ErrBadAddress.
func Resolve(entries []Entry, address string) (Session, error) {
	if strings.TrimSpace(address) == "" {
		return Session{}, fmt.Errorf("%w: empty address", ErrBadAddress)
	}
	var live []Entry
	for _, e := range entries {
		if e.Live() {
			live = append(live, e)
		}
	}
	if strings.HasPrefix(address, "cc-peer:") {
		return resolveEndpoint(entries, live, address)
	}
	var matches []Entry
	if matches = filter(live, func(e Entry) bool { return e.Record.SessionID == address }); len(matches) == 0 {
		matches = filter(live, func(e Entry) bool {
			return e.Record.Name == address ||
				(len(address) >= MinIDPrefix && strings.HasPrefix(e.Record.SessionID, address))
		})
	}
	switch len(matches) {
	case 0:
		return Session{}, notLive(entries, address)
	case 1:
		return verified(live, matches[0])
	default:
		r := Refuse(ReasonIdentityMismatch, "%q matches %d live sessions; use a full session id or an endpoint", address, len(matches))
		r.Candidates = candidates(matches)
		return Session{}, r
	}
}

func resolveEndpoint(entries, live []Entry, address string) (Session, error) {
	ep, err := ParseEndpoint(address)
	if err != nil {
		return Session{}, fmt.Errorf("%w: %w", ErrBadAddress, err)
	}
	byPID := filter(live, func(e Entry) bool { return e.Record.PID == ep.PID() })
	switch {
	case len(byPID) == 0:
		for _, e := range entries {
			if e.Record.PID == ep.PID() && e.Record.Problem == "" {
				return Session{}, Refuse(ReasonNotLive, "endpoint pid %d: record %s is %s (%s); its transcript may still exist", ep.PID(), e.Record.File, e.Verdict, e.Reason)
			}
		}
		return Session{}, Refuse(ReasonNotLive, "no live session has pid %d; if it ended, its transcript may still exist", ep.PID())
	case len(byPID) > 1:
		r := Refuse(ReasonIdentityMismatch, "pid %d has %d live records", ep.PID(), len(byPID))
		r.Candidates = candidates(byPID)
		return Session{}, r
	}
	e := byPID[0]
	if e.Record.Name != ep.Name() {
		r := Refuse(ReasonIdentityMismatch, "endpoint names %q but pid %d is now named %q", ep.Name(), ep.PID(), e.Record.Name)
		r.Candidates = candidates(byPID)
		return Session{}, r
	}
	if e.Record.SocketPath != ep.Socket() {
		r := Refuse(ReasonIdentityMismatch, "endpoint socket %q but pid %d now publishes %q", ep.Socket(), ep.PID(), e.Record.SocketPath)
		r.Candidates = candidates(byPID)
		return Session{}, r
	}
	return verified(live, e)
}

// verified applies the identity rule: the session's name must resolve to
// that session alone among the live sessions.
func verified(live []Entry, e Entry) (Session, error) {
	if e.Record.Name != "" {
		same := filter(live, func(o Entry) bool { return o.Record.Name == e.Record.Name })
		if len(same) > 1 {
			r := Refuse(ReasonIdentityMismatch, "name %q is shared by %d live sessions; a message by name could reach the wrong one", e.Record.Name, len(same))
			r.Candidates = candidates(same)
			return Session{}, r
		}
	}
	return NewSession(e)
}

func notLive(entries []Entry, address string) error {
	for _, e := range entries {
		r := e.Record
		if e.Live() || r.Problem != "" {
			continue
		}
		if r.SessionID == address || r.Name == address || (len(address) >= MinIDPrefix && strings.HasPrefix(r.SessionID, address)) {
			return Refuse(ReasonNotLive, "session %s (%q) is not live: %s is %s (%s); its transcript may still exist", r.SessionID, r.Name, r.File, e.Verdict, e.Reason)
		}
	}
	return Refuse(ReasonNotLive, "no live session matches %q; if it has ended, its transcript may still exist", address)
}

func filter(es []Entry, keep func(Entry) bool) []Entry {
	var out []Entry
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

func candidates(es []Entry) []Candidate {
	out := make([]Candidate, 0, len(es))
	for _, e := range es {
		out = append(out, Candidate{SessionID: e.Record.SessionID, Name: e.Record.Name, PID: e.Record.PID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Receipt is what a transport returns when it has done its part.
type Receipt struct {
	// Transport is the transport's name ("courier", "socket", ...).
	Transport string
	// Outcome is "sent" (courier evidence), "posted" (socket accepted the
	// frame) or "delivered" (seen in the target's transcript).
	Outcome string
	// Detail is a short human note (may be empty).
	Detail string
}

// Plan describes what a transport would do, for `send --dry-run`.
type Plan struct {
	Transport string   `json:"transport"`
	Program   string   `json:"program,omitempty"`
	Argv      []string `json:"argv,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Stdin     string   `json:"stdin,omitempty"`
	Socket    string   `json:"socket,omitempty"`
	Frame     string   `json:"frame,omitempty"`
}
