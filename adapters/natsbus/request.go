package natsbus

import (
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/busnode"
	"github.com/peerctl/peerctl/domain"
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
const RequestVersion = busnode.RequestVersion

// MaxAnswerBytes bounds one answer (busnode.MaxAnswerBytes).
const MaxAnswerBytes = busnode.MaxAnswerBytes

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

// Request is one use case asked of a node, typed (busnode.Request);
// Answer a node's answer (busnode.Answer).
type (
	Request = busnode.Request
	Answer  = busnode.Answer
)
