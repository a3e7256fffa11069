package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// Protocol is the version of the line protocol between peerctl and its
// service (docs/SERVE.md): a client writes one request line; the service
// answers with at most one Stored line, Talk lines when asked, then one
// final line (Done).
const Protocol = 2

// maxLine bounds one line of the protocol: a 64 KiB text in base64 with
// the rest of its order, or an answer.
const maxLine = 4 << 20

// Paths are where the service's files are.
type Paths struct {
	StateDir, DB, Lock, Socket string
}

// PathsFor are the service's files for an environment (getenv):
// wiring.StateDir's state folder, wiring.ServeSocketDir's socket folder.
func PathsFor(getenv func(string) string) (Paths, error) {
	state, err := wiring.StateDir(getenv)
	if err != nil {
		return Paths{}, err
	}
	run, err := wiring.ServeSocketDir(getenv)
	if err != nil {
		return Paths{}, err
	}
	return Paths{StateDir: state, DB: filepath.Join(state, wiring.OutboxFileName), Lock: filepath.Join(state, wiring.ServeLockName),
		Socket: filepath.Join(run, wiring.ServeSocketName(state))}, nil
}

// Request is the one line a client writes.
type Request struct {
	// V is Protocol.
	V int `json:"v"`
	// Op is "ping" (is the service up, and how is it: serve status),
	// "fleet" (every node's presence on the bus Bus, from the service's
	// live view: list --fleet),
	// "stop" (end cleanly: the answer is its status, then the connection
	// stays open until the service has ended), "send" (Send: a plain or
	// durable send, decided by the trust policy here, a held one kept
	// awaiting approval), "cancel" or "retry" (outbox message ID), or
	// "approve" or "deny" (outbox message ID, which awaits approval: By
	// approves it, then it is delivered as a durable message, or denies
	// it). The dashboard's Approve and Deny are these ops too. "bus"
	// carries Carry to node Node of the fleet's bus Bus (carryBus).
	Op   string          `json:"op"`
	Send *wire.SendOrder `json:"send,omitempty"`
	ID   int64           `json:"id,omitempty"`
	// By is who approves or denies (the approver's entrance and session,
	// as the client found them); absent: unknown.
	By *wire.Sender `json:"by,omitempty"`
	// Confirmed, with "retry": the user was told that an outcome_unknown
	// message may have arrived already and asked to send it again (outbox
	// retry says so by being typed; the page by its "Send again"). Without
	// it the retry of an outcome_unknown message is refused
	// (outcome_unknown) and the message stays as it is.
	Confirmed bool `json:"confirmed,omitempty"`
	// Bus is the bus's servers as the client was given them (--nats,
	// $PEERCTL_NATS): the service carries a "bus" request only on that bus.
	Bus string `json:"bus,omitempty"`
	// Node and Carry are a "bus" request's: a node of the fleet's bus and
	// the typed request (busnode.Request) the service carries to it over
	// its own connection (carryBus).
	Node  string          `json:"node,omitempty"`
	Carry json.RawMessage `json:"carry,omitempty"`
	// Doc, with "fleet", asks for the sessions as list --json's document
	// written after the answer's line (Answer.FleetDoc); a service that
	// does not know it answers with the listing whole.
	Doc bool `json:"doc,omitempty"`
	// Talk, with "send", asks for Talk lines while a send that waits
	// (--wait, --await-reply) is handed over and waits: a command that
	// tells a person what goes on meanwhile. A service that does not know
	// it sends none; a client that does not ask gets none.
	Talk bool `json:"talk,omitempty"`
}

// Answer is one line the service writes. Strings that may hold any bytes
// (keys, addresses, texts, details that quote them) are base64 ([]byte),
// so what the client prints is what the command would have printed
// without the service.
type Answer struct {
	// Stored, on a line of its own before the final one, says a durable
	// send's message is in the outbox now: a client that hears no more
	// knows which message to look at.
	Stored *Ref `json:"stored,omitempty"`
	// Talk, on a line of its own before the final one (after Stored), is
	// one moment of a send that waits, when the request asked for it
	// (Request.Talk).
	Talk *Talk `json:"talk,omitempty"`
	// Done marks the final line.
	Done bool `json:"done,omitempty"`

	// PID is the service's (ping); Outbox its database file, and
	// OutboxError why it cannot be used ("" when it can).
	PID         int    `json:"pid,omitempty"`
	Outbox      string `json:"outbox,omitempty"`
	OutboxError string `json:"outboxError,omitempty"`
	// Status is how the service stands (ping, and stop before it stops).
	Status *Status `json:"status,omitempty"`

	// Fleet is "fleet"'s answer: every node's presence as list --fleet
	// reads it; absent when the service is on no bus, another one, or has
	// no view of it now.
	Fleet *wire.Listing `json:"fleet,omitempty"`
	// FleetDoc, with Fleet (its notes and Partial only), is the length in
	// bytes of the document written after this line, at most MaxFleetDoc:
	// the sessions as list --json prints them (Request.Doc).
	FleetDoc int `json:"fleetDoc,omitempty"`

	// Notes are lines for the client's stderr, before the rest.
	Notes []string `json:"notes,omitempty"`
	// Sent is a send's documents: a hand-over's receipt, or with Kept a
	// durable message kept for later (or a repeated key's first message).
	Sent *wire.Sent `json:"sent,omitempty"`
	Kept bool       `json:"kept,omitempty"`
	// Ref is the outbox message a durable send's receipt is about.
	Ref *Ref `json:"ref,omitempty"`
	// Message is outbox cancel's or retry's message as it now stands.
	Message *Message `json:"message,omitempty"`
	// Refusal is the send's or change's refusal; Error another failure
	// (Code its exit code; Usage: a usage error).
	Refusal *Refusal `json:"refusal,omitempty"`
	Error   []byte   `json:"error,omitempty"`
	Code    int      `json:"code,omitempty"`
	Usage   bool     `json:"usage,omitempty"`
	// Bus is a "bus" request's answer: the node's answer as it came
	// (busnode.Answer's JSON, at most busnode.MaxAnswerBytes), which the
	// client reads; BusFault, with Error, why there is none (BusNotSent,
	// BusNoService, BusUnanswered, BusBroken).
	Bus      []byte `json:"bus,omitempty"`
	BusFault string `json:"busFault,omitempty"`
}

// Ref is a durable message in a receipt: wire.OutboxRef with its key
// exact, and its address.
type Ref struct {
	ID      int64  `json:"id"`
	State   string `json:"state"`
	Key     []byte `json:"key,omitempty"`
	Address []byte `json:"address,omitempty"`
	// Host is the machine the message is for ("": this one).
	Host string `json:"host,omitempty"`
	// Reason is why the message is in its state (a kept one's detail).
	Reason    []byte `json:"reason,omitempty"`
	ExpiresAt string `json:"expiresAt"`
	Duplicate bool   `json:"duplicate,omitempty"`
	// Rule is the trust policy's rule that held it ("": none).
	Rule string `json:"rule,omitempty"`
}

// OutboxRef is r as the receipt's outbox object.
func (r *Ref) OutboxRef() *wire.OutboxRef {
	if r == nil {
		return nil
	}
	return &wire.OutboxRef{ID: r.ID, State: r.State, Key: string(r.Key), Address: string(r.Address), Host: r.Host, ExpiresAt: r.ExpiresAt, Duplicate: r.Duplicate,
		Rule: r.Rule}
}

// Message is an outbox message as `outbox show --json` prints it, its
// key, address and text exact.
type Message struct {
	Doc     wire.OutboxMessage `json:"doc"`
	Key     []byte             `json:"key,omitempty"`
	Address []byte             `json:"address,omitempty"`
	Text    []byte             `json:"text,omitempty"`
}

// OutboxMessage is m's document with its bytes exact.
func (m *Message) OutboxMessage() wire.OutboxMessage {
	d := m.Doc
	d.Key, d.Address, d.Text = string(m.Key), string(m.Address), string(m.Text)
	return d
}

// Refusal is a *domain.Refusal, its detail exact.
type Refusal struct {
	Reason       string             `json:"reason"`
	Detail       []byte             `json:"detail,omitempty"`
	Short        []byte             `json:"short,omitempty"`
	Candidates   []domain.Candidate `json:"candidates,omitempty"`
	Suggestions  []string           `json:"suggestions,omitempty"`
	Status       string             `json:"status,omitempty"`
	StatusReason string             `json:"statusReason,omitempty"`
}

// Err is r as the refusal it was (a word this build cannot read:
// outcome_unknown, with the word in the detail).
func (r *Refusal) Err() error {
	reason, err := domain.ParseReason(r.Reason)
	detail, short := string(r.Detail), string(r.Short)
	if err != nil {
		reason, detail, short = domain.ReasonOutcomeUnknown, fmt.Sprintf("the service refused with %q, a word this peerctl does not know: %s", r.Reason, detail), ""
	}
	return &domain.Refusal{Reason: reason, Detail: detail, Short: short, Candidates: r.Candidates, Suggestions: r.Suggestions, Status: r.Status, StatusReason: r.StatusReason}
}

// failed is err as a final answer: a refusal, a far side's failure (its
// message and exit code), a usage error (a bad address or endpoint), or
// another error (exit 1).
func failed(err error) Answer {
	a := Answer{Done: true}
	var fe *wire.FarError
	switch r, ok := domain.AsRefusal(err); {
	case ok:
		a.Refusal = &Refusal{Reason: r.Reason.String(), Detail: []byte(r.Detail), Short: []byte(r.Short), Candidates: r.Candidates, Suggestions: r.Suggestions,
			Status: r.Status, StatusReason: r.StatusReason}
	case errors.As(err, &fe):
		a.Error, a.Code = []byte(fe.Message), fe.Code
	case errors.Is(err, domain.ErrBadAddress), errors.Is(err, domain.ErrBadEndpoint), errors.As(err, new(usageError)):
		a.Error, a.Code, a.Usage = []byte(err.Error()), wire.ExitUsage, true
	default:
		a.Error, a.Code = []byte(err.Error()), wire.ExitError
	}
	return a
}

// usageError is a request the service refuses as a usage error (an id
// that names no message, a message in a state the change does not apply
// to).
type usageError struct{ error }

// WriteLine writes v as one JSON line.
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadLine reads one whole JSON line (its newline included) of at most
// maxLine bytes into v: a line cut short by the connection's end is an
// error, never read as a request.
func ReadLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return fmt.Errorf("a line over %d bytes", maxLine)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return json.Unmarshal(line, v)
}
