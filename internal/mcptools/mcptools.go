// Package mcptools is what peerctl's command line (internal/cli) and its
// MCP server (internal/mcpserve) share: the tools' names and arguments, and
// the tools as plain functions. It links no MCP SDK, so that the peerctl
// binary every other command runs does not pay for the SDK's package
// initialisation (docs/PERFORMANCE.md); only peerctl-mcp links the server.
package mcptools

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// The tools' names, as an MCP client lists them (Claude Code shows them as
// mcp__<server name>__<tool>).
const (
	ToolList = "list_sessions"
	ToolShow = "show_session"
	ToolSend = "send_message"
)

// MaxAwaitReplySeconds bounds send_message's await_reply_seconds (1 h).
const MaxAwaitReplySeconds = 3600

// MaxDurableSeconds bounds send_message's durable_seconds (30 days).
const MaxDurableSeconds = 30 * 24 * 3600

// ListArgs are list_sessions' arguments. The jsonschema tags are the
// descriptions the server's input schema carries.
type ListArgs struct {
	All     bool     `json:"all,omitempty" jsonschema:"true: every registry record with its verdict (live, stale, reused, foreign, ...), not only the live sessions"`
	Harness string   `json:"harness,omitempty" jsonschema:"list one harness only (the server's schema names them; default: all)"`
	Host    string   `json:"host,omitempty" jsonschema:"run on another machine: its ssh destination (an alias of the ssh config, user@host), whose own peerctl answers, or nats:NODE, a node of the fleet's bus, whose service answers; default: this machine"`
	Hosts   []string `json:"hosts,omitempty" jsonschema:"list several machines at once, merged (as list --host repeated): ssh destinations or nats:NODE, \".\" for this machine; with host, that one too. Each session carries its host; a machine that could not be listed is a note naming it, and its sessions are left out"`
}

// ShowArgs are show_session's arguments.
type ShowArgs struct {
	Session string `json:"session" jsonschema:"the session: a full session id, a unique id prefix (6+ characters), an exact name, an endpoint (cc-peer:v1:..., or ssh:v1:... for a session on another machine), or, for a record that is not live, its pid or file name"`
	Host    string `json:"host,omitempty" jsonschema:"run on another machine: its ssh destination (an alias of the ssh config, user@host), whose own peerctl answers, or nats:NODE, a node of the fleet's bus, whose service answers; default: this machine"`
}

// SendArgs are send_message's arguments.
type SendArgs struct {
	To        string `json:"to" jsonschema:"the session: a full session id, a unique id prefix (6+ characters), an exact name, or an endpoint (cc-peer:v1:..., or ssh:v1:... for a session on another machine)"`
	Text      string `json:"text" jsonschema:"the message, delivered byte for byte: non-empty UTF-8 without NUL bytes, at most 64 KiB"`
	Transport string `json:"transport,omitempty" jsonschema:"how to deliver; default: the target harness's own (the server's schema names each harness's transports)"`
	// AwaitReplySeconds > 0 waits for the target's reply (send --await-reply).
	Host              string `json:"host,omitempty" jsonschema:"send on another machine: its ssh destination (an alias of the ssh config, user@host), whose own peerctl answers, or nats:NODE, a node of the fleet's bus, whose service answers; default: this machine"`
	AwaitReplySeconds int    `json:"await_reply_seconds,omitempty" jsonschema:"when above 0: after the send, wait up to this many seconds for the target session's reply (a message from it to peerctl) and return it in the receipt as reply {text, fromName, from, at}; no reply in time is an error whose text starts with no_reply (the message itself was handed over). Not with transport socket. The call's deadline grows by the same time"`
	// DurableSeconds > 0 (or a Key) sends durably (send --durable).
	DurableSeconds int    `json:"durable_seconds,omitempty" jsonschema:"when above 0: keep the message in peerctl serve's outbox until the target can take it, at most this many seconds (send --durable); a target that cannot take it now gives outcome stored with outbox {id, state}, delivered later; with host, kept here and tried on that machine. Not with await_reply_seconds"`
	Key            string `json:"key,omitempty" jsonschema:"an idempotency key (send --key; durable for 24 h unless durable_seconds says): the same key again returns the first message's receipt, never delivers twice"`
}

// ExtraTime is how much longer than the server's call timeout the call may
// run: the reply's wait.
func (a SendArgs) ExtraTime() time.Duration { return time.Duration(a.AwaitReplySeconds) * time.Second }

// Tool is one tool's use case, bounded and guarded by its maker: raw is the
// call's arguments as the client sent them (nil when unknown), in the same
// decoded. An error's text is the tool's error result (a refusal's starts
// with its reason word).
type Tool[In, Out any] func(ctx context.Context, raw json.RawMessage, in In) (Out, error)

// Tools are the three tools; L, S and R are the results (list --json under
// "sessions", show --json, send --json's receipt), whose Go types give the
// tools' output schemas.
type Tools[L, S, R any] struct {
	List Tool[ListArgs, L]
	Show Tool[ShowArgs, S]
	Send Tool[SendArgs, R]
}

// Stdio is where a server speaks: JSON-RPC on In and Out, notes on Err
// (and, with Debug, the MCP session's log). Version is peerctl's.
type Stdio struct {
	In      io.Reader
	Out     io.Writer
	Err     io.Writer
	Version string
	Debug   bool
}
