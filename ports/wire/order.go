package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// OrderVersion is the version of a SendOrder's encoding (MarshalJSON):
// what peerctl serve's socket carries and its outbox keeps per message.
// An order that carries its entrance's decision (Decided) is of
// DecidedVersion, which a service of the release before refuses rather
// than read without it (it would decide weaker); every other order is
// of OrderVersion still. Both are read.
const (
	OrderVersion   = 3
	DecidedVersion = 4
)

// SendOrder is one send as the command line parsed it (send's flags, the
// MCP tool's arguments, a relay line), typed from its entrance to the use
// case: peerctl serve's socket carries it, its outbox keeps it, and every
// attempt runs it; no command line and no environment ever do.
type SendOrder struct {
	// Query is the send itself: address, text (bytes, in a string), how
	// to deliver, confirm and wait.
	Query SendQuery
	// Host is the machine the target runs on, as --host gave it (a
	// domain.Dest's string; "" for this one).
	Host string
	// Durable is the time to live of a durable send (send --durable;
	// 0: a plain send); Key its idempotency key ("" for none).
	Durable time.Duration
	Key     string
	// Expires is a durable send's absolute deadline as its sender gave it
	// (zero: none but Durable): set on mail to another node, which expires
	// the message by the earlier of it and Durable from when it takes it
	// (docs/FLEET.md, "Durable sends"). JSON "expiresAt", RFC 3339, UTC.
	Expires time.Time
	// Settings are what the send takes from the sender's setting.
	Settings Settings
	// Sender is who sends it, as the entrance found it (the trust policy's
	// entrance, and the sending session found by process ancestry): the
	// service decides the policy again with it (docs/POLICY.md). The zero
	// Sender (an order that says none) is entrance unknown: only a `*`
	// rule matches it.
	Sender domain.Sender
	// Decided is the trust policy's decision the entrance made, with its
	// own reading of the policy, when it was not allow (a hold: a deny
	// never leaves the entrance); nil: none. The service decides again
	// and the stricter of the two stands (domain.Stricter): a decision
	// made at an entrance is never weakened by the service's reading,
	// which may be of another policy file (docs/POLICY.md). It can only
	// make a send stricter, so an order need not prove it.
	Decided *domain.Decision
	// Retries, for a message another node's service put in this node's
	// mail, is its sender's outbox retry number that brought it (0: its
	// first post), kept with the message so that the same retry again
	// is not applied to it. Never encoded: the mail carries it
	// (Mail.Retry), the service sets it.
	Retries int
}

// exactSender is a SendOrder's sender as JSON, its names exact.
type exactSender struct {
	Entrance string `json:"entrance"`
	Where    []byte `json:"where,omitempty"`
	Name     []byte `json:"name,omitempty"`
	ID       []byte `json:"id,omitempty"`
}

// Settings are what a send needs from the sender's setting, made
// explicit: never the environment itself, and never a secret (an opencode
// server password is the service's own, read at delivery).
type Settings struct {
	// Flags are the harness plug-ins' flags by name (ports.HarnessFlag:
	// registry folders, harness homes, programs), each the flag's value,
	// else its variable's ($CLAUDE_CONFIG_DIR, $PEERCTL_CLAUDE, ...), a
	// relative path made absolute where the sender stood; absent: neither
	// was given, the harness's default applies; and each harness's
	// settings resolved where the sender stood (ports.HarnessPlugin.Carry:
	// opencode's database path).
	Flags map[string]string
	// HostTimeout bounds a call to another machine ($PEERCTL_HOST_TIMEOUT;
	// 0: the default); SSH is $PEERCTL_SSH ("": ssh).
	HostTimeout time.Duration
	SSH         string
}

// exactOrder is a SendOrder as JSON: every string that may hold any bytes
// (an address, a text, a key, a path) is base64 ([]byte), so bytes that
// are not UTF-8 cross exactly, and two keys that differ only there stay
// two keys.
type exactOrder struct {
	V              int               `json:"v"`
	Address        []byte            `json:"address,omitempty"`
	Text           []byte            `json:"text,omitempty"`
	Transport      []byte            `json:"transport,omitempty"`
	From           []byte            `json:"from,omitempty"`
	Timeout        time.Duration     `json:"timeout,omitempty"`
	ConfirmTimeout time.Duration     `json:"confirmTimeout,omitempty"`
	Wait           time.Duration     `json:"wait,omitempty"`
	AwaitReply     time.Duration     `json:"awaitReply,omitempty"`
	DryRun         bool              `json:"dryRun,omitempty"`
	NoConfirm      bool              `json:"noConfirm,omitempty"`
	RequireConfirm bool              `json:"requireConfirm,omitempty"`
	Host           []byte            `json:"host,omitempty"`
	Durable        time.Duration     `json:"durable,omitempty"`
	Key            []byte            `json:"key,omitempty"`
	ExpiresAt      string            `json:"expiresAt,omitempty"`
	Flags          map[string][]byte `json:"flags,omitempty"`
	HostTimeout    time.Duration     `json:"hostTimeout,omitempty"`
	SSH            []byte            `json:"ssh,omitempty"`
	Sender         *exactSender      `json:"sender,omitempty"`
	Decided        *exactDecision    `json:"decided,omitempty"`
}

// exactDecision is a SendOrder's Decided as JSON: its action, its rule's
// words (UTF-8 without control characters, as every rule's: strings) and
// place; the sender and target are the order's own.
type exactDecision struct {
	Action  string `json:"action"`
	From    string `json:"from"`
	To      string `json:"to"`
	Harness string `json:"harness,omitempty"`
	Host    string `json:"host,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Number  int    `json:"number,omitempty"`
	Default int    `json:"default,omitempty"`
	Unsure  bool   `json:"unsure,omitempty"`
}

// MarshalJSON writes o with its bytes exact (base64) and its version.
func (o SendOrder) MarshalJSON() ([]byte, error) {
	q := o.Query
	e := exactOrder{V: OrderVersion, Address: []byte(q.Address), Text: []byte(q.Text), Transport: []byte(q.Transport), From: []byte(q.From),
		Timeout: q.Timeout, ConfirmTimeout: q.ConfirmTimeout, Wait: q.Wait, AwaitReply: q.AwaitReply, DryRun: q.DryRun,
		NoConfirm: q.NoConfirm, RequireConfirm: q.RequireConfirm, Host: []byte(o.Host), Durable: o.Durable, Key: []byte(o.Key),
		ExpiresAt: exactTime(o.Expires), HostTimeout: o.Settings.HostTimeout, SSH: []byte(o.Settings.SSH)}
	if f := o.Sender; f.Entrance() != domain.EntranceUnknown {
		e.Sender = &exactSender{Entrance: f.Entrance().String(), Where: []byte(f.Where()), Name: []byte(f.SessionName()), ID: []byte(f.SessionID())}
	}
	if d := o.Decided; d != nil {
		e.V = DecidedVersion
		r := d.Rule
		e.Decided = &exactDecision{Action: d.Action.String(), From: r.From.String(), To: r.To.Glob(), Harness: r.To.Harness(), Host: r.To.Host(),
			Cwd: r.To.Cwd(), Number: d.Number, Default: d.Default, Unsure: d.Unsure}
	}
	if len(o.Settings.Flags) > 0 {
		e.Flags = make(map[string][]byte, len(o.Settings.Flags))
		for k, v := range o.Settings.Flags {
			e.Flags[k] = []byte(v)
		}
	}
	return json.Marshal(e)
}

// UnmarshalJSON reads what MarshalJSON wrote; another version is an
// error.
func (o *SendOrder) UnmarshalJSON(b []byte) error {
	var e exactOrder
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	switch {
	case e.V != OrderVersion && e.V != DecidedVersion:
		return fmt.Errorf("a send order of version %d, not %d or %d", e.V, OrderVersion, DecidedVersion)
	case e.V == OrderVersion && e.Decided != nil:
		return fmt.Errorf("a send order of version %d with a decision (version %d)", e.V, DecidedVersion)
	}
	*o = SendOrder{Query: SendQuery{Address: string(e.Address), Text: string(e.Text), Transport: string(e.Transport), From: string(e.From),
		Timeout: e.Timeout, ConfirmTimeout: e.ConfirmTimeout, Wait: e.Wait, AwaitReply: e.AwaitReply, DryRun: e.DryRun,
		NoConfirm: e.NoConfirm, RequireConfirm: e.RequireConfirm}, Host: string(e.Host), Durable: e.Durable, Key: string(e.Key),
		Settings: Settings{HostTimeout: e.HostTimeout, SSH: string(e.SSH)}}
	if e.ExpiresAt != "" {
		at, err := time.Parse(time.RFC3339Nano, e.ExpiresAt)
		if err != nil {
			return fmt.Errorf("a send order's expiresAt: %w", err)
		}
		o.Expires = at.UTC()
	}
	if f := e.Sender; f != nil {
		ent, err := domain.ParseEntrance(f.Entrance)
		if err != nil {
			return fmt.Errorf("a send order's sender: %w", err)
		}
		o.Sender = domain.NewSender(ent, string(f.Where)).WithSession(string(f.Name), string(f.ID))
	}
	if d := e.Decided; d != nil {
		r, err := domain.NewRule(d.Action, d.From, d.To, d.Harness, d.Host, d.Cwd)
		if err != nil {
			return fmt.Errorf("a send order's decision: %w", err)
		}
		host := o.Host
		if host == domain.LocalDest {
			host = ""
		}
		o.Decided = &domain.Decision{Action: r.Action, Rule: r, Number: d.Number, Default: d.Default, Unsure: d.Unsure, From: o.Sender,
			To: domain.AddressTarget(o.Query.Address, host)}
	}
	if len(e.Flags) > 0 {
		o.Settings.Flags = make(map[string]string, len(e.Flags))
		for k, v := range e.Flags {
			o.Settings.Flags[k] = string(v)
		}
	}
	return nil
}

// Waits reports whether the send waits after the hand-over (--wait,
// --await-reply).
func (o SendOrder) Waits() bool { return o.Query.Wait > 0 || o.Query.AwaitReply > 0 }

// OutboxMessageOf is m, with its history hist (oldest first; nil: none),
// as `outbox show --json` prints it.
func OutboxMessageOf(m ports.OutboxMessage, hist []ports.OutboxEvent) OutboxMessage {
	out := OutboxMessage{ID: m.ID, Key: m.Key, State: m.State.String(), Reason: m.Reason, Address: m.Address, Host: m.Host, SessionID: m.SessionID, Text: m.Text,
		CreatedAt: RFC3339(m.Created), UpdatedAt: RFC3339(m.Updated), ExpiresAt: RFC3339(m.Expires), Attempts: m.Attempts, Tries: m.Tries,
		Outcome: m.Outcome, Transport: m.Transport, MsgID: m.MsgID, Transcript: m.Transcript, Rule: m.Rule, ApprovedBy: m.ApprovedBy}
	if m.Sender.Entrance() != domain.EntranceUnknown {
		out.Sender = SenderOf(m.Sender)
	}
	if m.State == domain.OutboxStored {
		out.NextAttemptAt = RFC3339(m.NextAt)
	}
	for _, e := range hist {
		ev := OutboxEvent{At: RFC3339(e.At), State: e.State.String(), Reason: e.Reason}
		if e.Count > 1 {
			ev.Count, ev.LastAt = e.Count, RFC3339(e.Last)
		}
		out.History = append(out.History, ev)
	}
	return out
}

// exactTime is t in RFC 3339 UTC to the nanosecond ("" for the zero
// time): a deadline crosses between services exactly; what peerctl prints
// is RFC3339's.
func exactTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
