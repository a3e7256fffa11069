package natsbus

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// Requests over the bus: a node's service answers the use cases its own
// command line runs (list, show, enrich, send, doctor) for other machines,
// by NATS request and reply (docs/FLEET.md, "Requests"):
//
//	peerctl.v1.req.<to>.<from>     a Request from node <from> to node <to>
//	_INBOX.peerctl.<from>.>        <from>'s replies (its connection's inbox prefix)
//
// Each node's name is one subject token (Token: its '.' written '~'), so
// the servers' permissions can say who may take and make which requests
// (ServerConfig): the sender's name in the subject is the one its
// credentials allow, and the answering service reads it as the trust
// policy's entrance node:<from>.

// RequestVersion is the version of Request and Answer this build speaks.
const RequestVersion = 1

// MaxAnswerBytes bounds one answer (the servers' default max_payload is
// 1 MiB; an answer over it is refused by the service that would send it).
const MaxAnswerBytes = 1 << 20

// maxBudget bounds how long a service works on one request, whatever its
// caller said it waits.
const maxBudget = time.Hour

// Token is node's name as one subject token: '.' written '~' (a node's
// name has no '~': domain.ParseNode).
func Token(node string) string { return strings.ReplaceAll(node, ".", "~") }

// untoken is Token's inverse, checked (domain.ParseNode).
func untoken(tok string) (string, error) { return domain.ParseNode(strings.ReplaceAll(tok, "~", ".")) }

// RequestSubject is the subject of a request from node from to node to.
func RequestSubject(to, from string) string { return "peerctl.v1.req." + Token(to) + "." + Token(from) }

// InboxPrefix is node's inbox prefix: every reply it waits for comes on
// a subject under it, which only its credentials may read.
func InboxPrefix(node string) string { return "_INBOX.peerctl." + Token(node) }

// Request is one use case asked of a node, typed: no argv, no
// environment, nothing a shell reads. Op says which; the fields of the
// others are empty.
type Request struct {
	V int `json:"v"`
	// Op is "list", "show", "enrich", "send" or "doctor".
	Op string `json:"op"`
	// Budget is how long the caller waits for the answer (the service
	// works on it no longer, and at most an hour).
	Budget time.Duration `json:"budget"`
	// All and Only are list's (wire.ListQuery; Only the harnesses' words).
	All  bool     `json:"all,omitempty"`
	Only []string `json:"only,omitempty"`
	// Address is show's, its bytes exact.
	Address []byte `json:"address,omitempty"`
	// IDs are enrich's.
	IDs []string `json:"ids,omitempty"`
	// Send is send's order (wire.SendOrder: its bytes exact); only its
	// Query is used: the sender's settings (its paths, its ssh) are
	// never the node's, and a durable send across machines is not built.
	Send *wire.SendOrder `json:"send,omitempty"`
}

// Answer is a node's answer: what its command line would have printed for
// the request with --json (Doc: the same document), its stderr's lines
// and its exit code, and its peerctl's version. The caller reads it as it
// reads another machine's output over ssh (the wire package's readers).
type Answer struct {
	V       int             `json:"v"`
	Version string          `json:"version"`
	Code    int             `json:"code"`
	Doc     json.RawMessage `json:"doc"`
	Stderr  []string        `json:"stderr"`
}

// listQuery is r's ListQuery; an unknown harness is an error.
func (r Request) listQuery() (wire.ListQuery, error) {
	q := wire.ListQuery{All: r.All}
	for _, w := range r.Only {
		h, err := domain.ParseHarness(w)
		if err != nil {
			return q, fmt.Errorf("list: %w", err)
		}
		q.Only = append(q.Only, h)
	}
	return q, nil
}
