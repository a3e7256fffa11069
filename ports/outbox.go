package ports

import (
	"context"
	"errors"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// ErrNoMessage is returned for an outbox id that names no message.
var ErrNoMessage = errors.New("no such message in the outbox")

// ErrWrongState is returned by Outbox.Move when the message is not in one
// of the states the move starts from (someone else moved it first).
var ErrWrongState = errors.New("the message is not in a state this change applies to")

// OutboxMessage is one durable message and where it stands.
type OutboxMessage struct {
	// ID is the outbox's id, from 1, never reused.
	ID int64
	// Key is the caller's idempotency key (send --key); "" for none.
	Key string
	// Address is the target as given (session id, name, endpoint...).
	Address string
	// Host is the machine the target runs on (send --durable --host: the
	// Dest as given); "" for this one.
	Host string
	// Text is the message, byte for byte.
	Text string
	// Request is how the message is to be sent, opaque to the store (the
	// service's own encoding: the send's flags and settings).
	Request []byte
	State   domain.OutboxState
	// Reason says why the message is in State (the last refusal's words,
	// "cancelled by outbox cancel", ...); "" when nothing needs saying.
	Reason string
	// Created is when it was stored; Expires when its time to live ends;
	// NextAt when the next attempt is due (stored only); Updated the last
	// change. Times are kept to the nanosecond, UTC.
	Created, Expires, NextAt, Updated time.Time
	// TTL is the time to live it was stored with (Expires − Created at
	// Put, whatever TTL the caller set): a retry or an approval renews
	// Expires to TTL from then.
	TTL time.Duration
	// Attempts counts the attempts begun (each a hand-over that may have
	// reached the harness); Tries counts every try, from when it began,
	// whatever came of it (a hand-over, a target that was away, a host
	// that did not answer): the backoff's n. Attempts are a part of Tries
	// (one tried by an older peerctl may show fewer tries).
	Attempts, Tries int
	// SessionID and Transcript are the resolved target of the last attempt
	// and its transcript file ("" when unknown); AttemptAt is when that
	// attempt's hand-over began. A crashed attempt is checked against them.
	SessionID, Transcript string
	AttemptAt             time.Time
	// Outcome, Transport and MsgID are the harness's receipt once
	// delivered: "queued", "held", "delivered"...; Claude Code's msg_id.
	Outcome, Transport, MsgID string
	// Sender is who sent it (the trust policy's entrance, and the sending
	// session when known; the zero Sender for a message stored before
	// peerctl kept it: entrance unknown).
	Sender domain.Sender
	// Rule is the trust policy's rule that held it, in the policy file's
	// words with its place ("rule 2: hold from=mcp to=prod-*"); "" when
	// no rule held it.
	Rule string
	// ApprovedBy says who approved it (outbox approve: the approver as a
	// sender, "cli" or "cli:reviewer-1"); "" while it was not approved.
	ApprovedBy string
	// Retries counts the times outbox retry made it due again; for a
	// message another node's service put here (from the fleet's bus), the
	// highest of its sender's retries applied here (docs/FLEET.md).
	Retries int
}

// OutboxEvent is one change in a message's history.
type OutboxEvent struct {
	// Seq orders every change of every message, from 1; MessageID,
	// Address and Host name the message (Events sets them; Get leaves them
	// zero).
	Seq       int64
	MessageID int64
	Address   string
	Host      string
	At        time.Time
	State     domain.OutboxState
	Reason    string
	// Count is how many changes in a row this event stands for: a change
	// with the state and reason of the message's last history line is
	// folded into it (Count+1, Last its time) rather than added. Last is
	// the latest of them (At the first); Count 1 has Last equal to At.
	Count int
	Last  time.Time
}

// OutboxChange is what Outbox.Move sets. Zero fields leave the message's
// value as it was, except Reason (always set) and NextAt (set when State is
// OutboxStored).
type OutboxChange struct {
	State  domain.OutboxState
	Reason string
	At     time.Time
	NextAt time.Time
	// Attempt counts a new attempt (Attempts+1) and sets AttemptAt to At.
	Attempt bool
	// Tried counts a try (Tries+1).
	Tried                 bool
	SessionID, Transcript string
	Outcome, Transport    string
	MsgID                 string
	// Expires, when not zero, is a new end of the time to live (retry).
	Expires time.Time
	// Rule and ApprovedBy, when not "", set the message's (a hold at an
	// attempt; outbox approve).
	Rule, ApprovedBy string
	// Retries, when above the message's, sets its Retries (a retry).
	Retries int
	// ClearReceipt empties Outcome, Transport and MsgID before the fields
	// above set theirs: a retry, after which the last receipt no longer
	// stands.
	ClearReceipt bool
}

// OutboxFilter selects messages for Outbox.List; zero fields select all.
type OutboxFilter struct {
	States []domain.OutboxState
	// Target matches Address exactly or SessionID exactly.
	Target string
	// Key matches Key exactly ("": any).
	Key string
	// Limit is the most messages returned (0: no limit), newest first.
	Limit int
	// Before keeps the messages older than message Before: those whose
	// ID is below it (0: every one). A page of the outbox starts before
	// the oldest ID of the page before it.
	Before int64
}

// Outbox keeps durable messages (peerctl serve). One process writes it
// (the service, holding its lock); readers may list and show at any time.
// Every error but ErrNoMessage and ErrWrongState means the store cannot be
// used (corrupt, full disk, read-only folder): callers refuse durable
// sends with it and never delete or replace the file.
type Outbox interface {
	// Put stores m (its Retries too) as a new message in m.State, OutboxStored when zero
	// (OutboxAwaitingApproval for a held one; its history begins with that
	// state and m.Reason at m.Created) and returns it with its ID. When m.Key
	// is not "" and a message with that key exists, nothing is stored and
	// that message is returned with created false.
	Put(ctx context.Context, m OutboxMessage) (got OutboxMessage, created bool, err error)
	// Get returns message id and its history, oldest first (ErrNoMessage).
	Get(ctx context.Context, id int64) (OutboxMessage, []OutboxEvent, error)
	// List returns the messages f selects, newest first.
	List(ctx context.Context, f OutboxFilter) ([]OutboxMessage, error)
	// Count is how many messages f selects, its Limit aside (the
	// dashboard's "the newest N of M").
	Count(ctx context.Context, f OutboxFilter) (int, error)
	// Move changes message id to c if it is in one of from (ErrWrongState
	// otherwise; ErrNoMessage), adds c to its history (folded into the
	// last line when that has c's state and reason: OutboxEvent.Count),
	// and returns it.
	Move(ctx context.Context, id int64, from []domain.OutboxState, c OutboxChange) (OutboxMessage, error)
	// Events returns the changes of every message after sequence number
	// after, oldest first, at most limit (watch).
	Events(ctx context.Context, after int64, limit int) ([]OutboxEvent, error)
	// Prune deletes the messages in one of states whose last change is
	// before before, with their history (their keys are then free), and
	// returns how many it deleted.
	Prune(ctx context.Context, states []domain.OutboxState, before time.Time) (int, error)
	// Mark is the number kept under name by SetMark (0 when none): the
	// service's place in Events for a reader that must survive a restart
	// (the receipts published to the fleet's bus).
	Mark(ctx context.Context, name string) (int64, error)
	// SetMark keeps seq under name.
	SetMark(ctx context.Context, name string, seq int64) error
	// Close closes the store.
	Close() error
}
