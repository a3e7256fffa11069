package wire

import (
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Receipt is `send --json`'s document on success (docs/OUTPUT.md): what
// this peerctl prints, what a far side's peerctl prints for send --host
// (read back with exact keys), and the MCP tool send_message's result.
type Receipt struct {
	OK bool `json:"ok"`
	// Host is the machine the session runs on (send --host); absent for this one.
	Host      string `json:"host,omitempty"`
	Outcome   string `json:"outcome"` // queued, held, posted, delivered; "planned" for --dry-run
	Transport string `json:"transport"`
	Harness   string `json:"harness"`
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	Name      string `json:"name"`
	Endpoint  string `json:"endpoint"`
	Detail    string `json:"detail,omitempty"`
	// Outbox is set for send --durable, and for a message the trust
	// policy held (outcome awaiting_approval): the message's id and state
	// in peerctl serve's outbox.
	Outbox *OutboxRef `json:"outbox,omitempty"`
	// Sender is who sent it, as peerctl serve saw it (a send it ran);
	// absent otherwise.
	Sender *Sender `json:"sender,omitempty"`
	// MsgID and ClaudeResult are Claude Code's msg_id and words (courier).
	MsgID        string `json:"msgId,omitempty"`
	ClaudeResult string `json:"claudeResult,omitempty"`
	ElapsedMs    int64  `json:"elapsedMs"`
	// TransportMs is the transport's own time (the post, the courier run);
	// confirmMs (Confirm) the transcript confirmation's.
	TransportMs int64        `json:"transportMs"`
	Plan        *domain.Plan `json:"plan,omitempty"`
	Confirm
	// Reply and OtherInbound are set with --await-reply.
	Reply        *Inbound  `json:"reply,omitempty"`
	OtherInbound []Inbound `json:"otherInbound,omitempty"`
	// Refusal is set, with ok false, when --await-reply got no reply
	// (no_reply) or the --wait ran out (wait_timeout).
	Refusal *RefusalBody `json:"refusal,omitempty"`
}

// Confirm are the receipt's confirmation fields (docs/CONFIRMATION.md).
type Confirm struct {
	// Confirmed is true when the target's transcript shows the text.
	Confirmed bool `json:"confirmed"`
	// Transcript is the transcript file read ("" when unknown).
	Transcript string `json:"transcript,omitempty"`
	// ConfirmedAt is the enqueue line's timestamp (RFC 3339, UTC).
	ConfirmedAt string `json:"confirmedAt,omitempty"`
	// ConfirmNote says why the send is not confirmed.
	ConfirmNote string `json:"confirmNote,omitempty"`
	// ConfirmMs is how long the transcript confirmation took, in ms (0
	// when no transcript was read).
	ConfirmMs int64 `json:"confirmMs"`
	// Wait is set with --wait.
	Wait *Wait `json:"wait,omitempty"`
}

// Wait is the receipt's "wait" object: how a --wait ended (times in ms).
type Wait struct {
	End    string `json:"end"`    // idle, exited, timeout, interrupted, failed
	Status string `json:"status"` // the last status seen: idle, busy, waiting, unknown
	// WaitingFor is, when Status is waiting, what the session waits on
	// ("dialog open", …).
	WaitingFor string `json:"waitingFor,omitempty"`
	ElapsedMs  int64  `json:"elapsedMs"`
	Note       string `json:"note,omitempty"`
	// TakenUp says whether the transcript showed the target take the
	// message up; TakenUpAt is when, RFC 3339 UTC.
	TakenUp   bool   `json:"takenUp"`
	TakenUpAt string `json:"takenUpAt,omitempty"`
}

// Inbound is one message that reached the courier (send --await-reply's
// reply and otherInbound; relay's inbound lines). docs/OUTPUT.md.
type Inbound struct {
	Text      string `json:"text"`
	FromName  string `json:"fromName"`
	From      string `json:"from"`
	At        string `json:"at"`
	Truncated bool   `json:"truncated,omitempty"`
}

// OutboxRef is the receipt's "outbox" object (docs/OUTPUT.md).
type OutboxRef struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
	Key   string `json:"key,omitempty"`
	// Address and Host are the message's target as stored (for a
	// duplicate, the first message's); Host is absent for this machine.
	Address   string `json:"address,omitempty"`
	Host      string `json:"host,omitempty"`
	ExpiresAt string `json:"expiresAt"`
	// Duplicate is true when --key named a message already in the outbox:
	// this is that message, nothing new was stored or sent.
	Duplicate bool `json:"duplicate,omitempty"`
	// Rule is the trust policy's rule that held it ("rule 2: hold
	// from=mcp to=prod-*"); absent when none did.
	Rule string `json:"rule,omitempty"`
}

// Sender is who sent a message (docs/OUTPUT.md#the-sender): the trust
// policy's entrance ("cli", "mcp", "relay", "dashboard", "host", "node";
// "unknown" when it was not said), Where (a host's DEST, a node's name;
// absent otherwise), the sending session's name and id (absent when not
// known), and As, the sender as a rule's --from names it
// ("mcp:reviewer-1", "cli").
type Sender struct {
	Entrance    string `json:"entrance"`
	Where       string `json:"where,omitempty"`
	SessionName string `json:"sessionName,omitempty"`
	SessionID   string `json:"sessionId,omitempty"`
	As          string `json:"as"`
}

// SenderOf is s as a document.
func SenderOf(s domain.Sender) *Sender {
	return &Sender{Entrance: s.Entrance().String(), Where: s.Where(), SessionName: s.SessionName(), SessionID: s.SessionID(), As: s.String()}
}

// SendQuery is one send as `peerctl send` takes it, for a node to run:
// here, or on another machine by its peerctl (`send --json` with these
// flags, the text on stdin). Durations are Go durations; 0 leaves a flag
// at its default (ConfirmTimeout, Wait, AwaitReply: none).
type SendQuery struct {
	Address, Text, Transport, From string
	Timeout, ConfirmTimeout        time.Duration
	Wait, AwaitReply               time.Duration
	DryRun, NoConfirm              bool
	RequireConfirm                 bool
	// Settled: hand it over only to a session that has settled, not one
	// still starting (a durable message's rule; app.SendRequest.Settled).
	// A peerctl sending over ssh asks with SendSettledEnv. Omitted when
	// false: the documents that carry a query (the bus's Mail, read with
	// exact keys) are an older build's too.
	Settled bool `json:",omitempty"`
}

// Sent is what a node's send gave, as `send --json` gives it: its
// receipt (for a far side's, with its host and its endpoint in the ssh:v1:
// form; ok false beside no_reply's and wait_timeout's refusal), its Notes
// (the lines to say on stderr after it, whole, as a far side printed them
// or as this one words them: "peerctl: warning: …", the refusal of a
// receipt with ok false; escaped when printed) and its exit code (0, or
// that refusal's).
type Sent struct {
	Receipt Receipt
	Notes   []string
	Code    int
}

// TakenUp says whether a target had taken a message up (at: RFC 3339, ""
// when not), as a wait's words say it.
func TakenUp(at string) string {
	if at == "" {
		return "not taken up yet"
	}
	return "taken up at " + Safe(at)
}
