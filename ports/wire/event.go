package wire

import (
	"time"

	"github.com/peerctl/peerctl/domain"
)

// EventLost is the event of a machine whose watch ended (watch over
// hosts): its connection was lost, or its peerctl stopped or printed what
// this build does not read.
const EventLost = "lost"

// EventLeft is the event of a node that left the fleet's bus (watch
// --fleet): its service stopped, or its presence expired; its sessions'
// gone events come before it. The watch goes on.
const EventLeft = "left"

// Event is one line of `watch --json` (docs/CONFIRMATION.md), from this
// machine's watcher (NewEvent) or read from a far side's watch, and the
// one document the watch's printer reads.
type Event struct {
	Event string `json:"event"` // appeared, gone, died, status, renamed; lost (a watched machine's end); left (a node of watch --fleet)
	// Host is the machine the session runs on (watch --host); absent for this one.
	Host      string `json:"host,omitempty"`
	At        string `json:"at"` // when peerctl noticed it, RFC 3339 UTC
	Harness   string `json:"harness"`
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	Status    string `json:"status"` // idle, busy, waiting, unknown
	// WaitingFor is, for a waiting session, what it waits on.
	WaitingFor     string `json:"waitingFor,omitempty"`
	Cwd            string `json:"cwd"`
	Endpoint       string `json:"endpoint"` // "" when not addressable
	Verdict        string `json:"verdict"`  // live; stale or reused for died; removed for gone
	Reason         string `json:"reason,omitempty"`
	File           string `json:"file"`
	Initial        bool   `json:"initial,omitempty"`
	PreviousName   string `json:"previousName,omitempty"`
	PreviousStatus string `json:"previousStatus,omitempty"`
	// Unaddressable is, for a live session that cannot take a message
	// yet, why (its harness's words).
	Unaddressable string `json:"unaddressable,omitempty"`
}

// NewEvent is ev, noticed at at, as its document.
func NewEvent(ev domain.Event, at time.Time) Event {
	e := ev.Entry
	r := e.Record
	out := Event{Event: ev.Kind.String(), At: RFC3339(at), Harness: r.Harness.String(), SessionID: r.SessionID, PID: r.PID, Name: r.Name,
		Status: r.Status.String(), WaitingFor: r.WaitingFor, Cwd: r.Cwd, Endpoint: e.Endpoint().String(), Verdict: e.Verdict.String(),
		Reason: e.Reason, File: r.File, Initial: ev.Initial}
	if e.Live() && !e.Addressable {
		out.Unaddressable = e.Unaddressable
	}
	switch ev.Kind {
	case domain.EventRenamed:
		out.PreviousName = ev.PrevName
	case domain.EventStatus:
		out.PreviousStatus = ev.PrevStatus.String()
	}
	return out
}
