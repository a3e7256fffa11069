package wire

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/jsonexact"
)

// RelayProtocol is the version of `peerctl relay`'s line protocol
// (docs/OUTPUT.md, "peerctl relay: the line protocol"): version 1 has the
// output types ready, receipt, refusal and inbound. A new type or a
// changed meaning gets a new version; new fields may be added to a type
// within a version.
const RelayProtocol = 1

// A relay refusal's reason is a domain reason or one of these words.
const (
	// RelayInvalidRequest: the input line is not a send request.
	RelayInvalidRequest = "invalid_request"
	// RelayError: an unexpected error (exit 1 for a one-shot send).
	RelayError = "error"
)

// RelayQuery is what `relay` asks of a node: the relay's display name
// (--name; "" is the default, "peerctl") and the bound of one send
// (--timeout, > 0).
type RelayQuery struct {
	Name    string
	Timeout time.Duration
}

// RelayLine is one line a relay prints (docs/OUTPUT.md): a RelayReady,
// RelayReceipt, RelayRefusal or RelayInbound, each one JSON object.
type RelayLine interface {
	// Answers is the input line the line answers (0: none, as for ready
	// and inbound).
	Answers() int
	// OnHost is the line with its Host set (relay --host).
	OnHost(host string) RelayLine
}

// RelayReady is the first line: {"type":"ready","protocol":1,"name":NAME},
// with "host" for a relay on another machine.
type RelayReady struct {
	Type string `json:"type"` // "ready"
	// Host is the machine the relay runs on (relay --host), on every line.
	Host     string `json:"host,omitempty"`
	Protocol int    `json:"protocol"`
	Name     string `json:"name"`
}

// RelayReceipt is the line for a send the courier handed over:
// {"type":"receipt","id":ID,"line":N,"outcome":...,"msgId":...,
// "transport":...,"sessionId":...,"pid":...,"name":...,"elapsedMs":...}
// with "claudeResult", "outbox" (a durable request) and "host" when set.
type RelayReceipt struct {
	Type         string          `json:"type"` // "receipt"
	Host         string          `json:"host,omitempty"`
	ID           json.RawMessage `json:"id,omitempty"`
	Line         int             `json:"line"`
	Outcome      string          `json:"outcome"`
	MsgID        string          `json:"msgId"`
	Transport    string          `json:"transport"`
	SessionID    string          `json:"sessionId"`
	PID          int             `json:"pid"`
	Name         string          `json:"name"`
	ClaudeResult string          `json:"claudeResult,omitempty"`
	ElapsedMs    int64           `json:"elapsedMs"`
	// Outbox is set for a durable request: the message in the outbox.
	Outbox *OutboxRef `json:"outbox,omitempty"`
}

// RelayRefusal is the line for a send that was refused or failed:
// {"type":"refusal","id":ID,"line":N,"reason":REASON,"detail":TEXT}, the
// reason a domain reason, RelayInvalidRequest or RelayError, with
// "candidates", "suggestions" and "host" when set.
type RelayRefusal struct {
	Type       string             `json:"type"` // "refusal"
	Host       string             `json:"host,omitempty"`
	ID         json.RawMessage    `json:"id,omitempty"`
	Line       int                `json:"line"`
	Reason     string             `json:"reason"`
	Detail     string             `json:"detail"`
	Candidates []domain.Candidate `json:"candidates,omitempty"`
	// Suggestions are live names close to a mistyped address (not_live).
	Suggestions []string `json:"suggestions,omitempty"`
}

// RelayInbound is the line for a message that reached the relay:
// {"type":"inbound", the fields of Inbound}, with "host" when set.
type RelayInbound struct {
	Type string `json:"type"` // "inbound"
	Host string `json:"host,omitempty"`
	Inbound
}

// Answers is 0: ready answers no input line.
func (RelayReady) Answers() int { return 0 }

// Answers is the input line the receipt is for.
func (x RelayReceipt) Answers() int { return x.Line }

// Answers is the input line the refusal is for.
func (x RelayRefusal) Answers() int { return x.Line }

// Answers is 0: an inbound message answers no input line.
func (RelayInbound) Answers() int { return 0 }

// OnHost is x with Host set.
func (x RelayReady) OnHost(host string) RelayLine { x.Host = host; return x }

// OnHost is x with Host set.
func (x RelayReceipt) OnHost(host string) RelayLine { x.Host = host; return x }

// OnHost is x with Host set.
func (x RelayRefusal) OnHost(host string) RelayLine { x.Host = host; return x }

// OnHost is x with Host set.
func (x RelayInbound) OnHost(host string) RelayLine { x.Host = host; return x }

// ReadRelayLine reads one line a far side's relay printed, by its type,
// with exact keys (jsonexact.Exact).
func ReadRelayLine(b []byte) (RelayLine, error) {
	var t struct {
		Type string `json:"type"`
	}
	if err := jsonexact.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	switch t.Type {
	case "ready":
		var x RelayReady
		err := jsonexact.Exact(b, &x)
		return x, err
	case "receipt":
		var x RelayReceipt
		err := jsonexact.Exact(b, &x)
		return x, err
	case "refusal":
		var x RelayRefusal
		err := jsonexact.Exact(b, &x)
		return x, err
	case "inbound":
		var x RelayInbound
		err := jsonexact.Exact(b, &x)
		return x, err
	}
	return nil, errors.New("a relay line of unknown type " + Safe(Clip(t.Type, 40)))
}
