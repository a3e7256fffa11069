package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// Durable sends across machines (docs/FLEET.md, "Durable sends"): a
// sender's durable send to node NODE travels as a Mail on the bus, kept
// in a stream until NODE's service takes it into its own outbox; that
// service answers with a MailReceipt each time the message's state there
// changes (stored, delivered, taken up, replied, or why not).

// AdminKeyFile is the operator's seed file in the fleet's keys' folder
// (written by `peerctl policy nats-config`, read by `policy nats-setup`): a
// name no node's can be (domain.ParseNode: a node's starts with a letter or
// digit). Here, not in adapters/natsbus, so that the command line, which
// peerctl links without the bus client, names it from the same place.
const AdminKeyFile = "_admin.nk"

// MailVersion is the version of Mail and MailReceipt this build writes and
// reads.
const MailVersion = 1

// MaxMailBytes bounds one Mail or MailReceipt as it is read (the servers'
// default max_payload is 1 MiB).
const MaxMailBytes = 1 << 20

// MaxMailHistory bounds the history lines a MailReceipt carries (the
// newest kept): the outbox folds repeats, so a message's history is short.
const MaxMailHistory = 64

// Mail is one durable send for another node: the same typed order the
// service's socket and the bus's requests carry. Its Key (1 to 200 bytes)
// is required: the receiving service keeps one message per sender and key
// for the message's life. The sender's node is not in it: it is the
// subject's, which the servers' permissions let only that node use.
type Mail struct {
	V     int       `json:"v"`
	Order SendOrder `json:"order"`
	// Retry is the sender's outbox retry of the message (0, omitted: its
	// first post): the receiving service retries its message of that key
	// once per number (docs/FLEET.md).
	Retry int `json:"retry,omitempty"`
}

// MailReceipt is where a message taken from the bus stands in the
// receiving node's outbox: its state, reason and history there (the
// outbox's words, docs/OUTPUT.md), and the harness's receipt once handed
// over. Key is the sender's key, exact bytes; ID the receiving outbox's id (0: never stored there, refused).
// To (not sent) is the sender's node, whose receipts subject it goes to.
type MailReceipt struct {
	V         int           `json:"v"`
	To        string        `json:"-"`
	Key       []byte        `json:"key"`
	ID        int64         `json:"id"`
	State     string        `json:"state"`
	Reason    string        `json:"reason"`
	Outcome   string        `json:"outcome"`
	Transport string        `json:"transport"`
	MsgID     string        `json:"msgId"`
	SessionID string        `json:"sessionId"`
	UpdatedAt string        `json:"updatedAt"`
	History   []OutboxEvent `json:"history"`
}

// ReadMailReceipt reads one MailReceipt another node wrote: at most
// MaxMailBytes, exactly this build's keys (jsonexact), of MailVersion,
// a key of 1 to 200 bytes, an outbox state this build knows (its history's
// too), RFC 3339 times, at most MaxMailHistory history lines; its texts
// clipped to maxMailText. Errors say which rule it broke.
func ReadMailReceipt(data []byte) (MailReceipt, error) {
	var r MailReceipt
	if len(data) > MaxMailBytes {
		return r, fmt.Errorf("a receipt of %d bytes, over %d", len(data), MaxMailBytes)
	}
	if err := jsonexact.Exact(data, &r); err != nil {
		return r, fmt.Errorf("a receipt this build cannot read: %w", err)
	}
	if r.V != MailVersion {
		return r, fmt.Errorf("a receipt of version %d; this peerctl reads %d (run the same build on every node)", r.V, MailVersion)
	}
	if len(r.Key) == 0 || len(r.Key) > 200 {
		return r, fmt.Errorf("a receipt's key of %d bytes (want 1 to 200)", len(r.Key))
	}
	if r.ID < 0 {
		return r, errors.New("a receipt with a negative message id")
	}
	if len(r.History) > MaxMailHistory {
		return r, fmt.Errorf("a receipt of %d history lines, over %d", len(r.History), MaxMailHistory)
	}
	if _, err := domain.ParseOutboxState(r.State); err != nil {
		return r, fmt.Errorf("a receipt's state: %w", err)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.UpdatedAt); err != nil {
		return r, fmt.Errorf("a receipt's updatedAt: %w", err)
	}
	for i := range r.History {
		e := &r.History[i]
		if _, err := domain.ParseOutboxState(e.State); err != nil {
			return r, fmt.Errorf("a receipt's history: %w", err)
		}
		if _, err := time.Parse(time.RFC3339Nano, e.At); err != nil {
			return r, fmt.Errorf("a receipt's history: %w", err)
		}
		if e.LastAt != "" {
			if _, err := time.Parse(time.RFC3339Nano, e.LastAt); err != nil {
				return r, fmt.Errorf("a receipt's history: %w", err)
			}
		}
		e.Reason = Clip(e.Reason, maxMailText)
	}
	r.Reason = Clip(r.Reason, maxMailText)
	for _, s := range []*string{&r.Outcome, &r.Transport, &r.MsgID, &r.SessionID} {
		*s = Clip(*s, 200)
	}
	return r, nil
}

// maxMailText bounds a receipt's reasons as read (4 KiB each).
const maxMailText = 4 << 10
