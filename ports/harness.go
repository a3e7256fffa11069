package ports

import (
	"context"
	"log/slog"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// Harness is one coding-agent program peerctl serves (Claude Code, Qwen
// Code, ...), brought as one plug-in: its registry reader, liveness rules,
// transports (the first its default), confirmation, long-lived couriers
// (reply listening) and home folder. The app receives every
// harness as an fx value group (group:"harnesses") and never asks which one
// it holds: what differs between harnesses is what a Harness reports.
type Harness interface {
	// Kind is the harness's word in the domain's closed set; the records
	// its Registry reads carry it.
	Kind() domain.Harness
	// Registry reads the harness's live-session registry.
	Registry() Registry
	// Liveness checks the harness's records against the operating system.
	Liveness() Liveness
	// Transports deliver to the harness's sessions; the first is the
	// default (send without --transport).
	Transports() []Transport
	// Couriers starts the harness's long-lived couriers (send
	// --await-reply, relay, the MCP tools' replies); nil when it has none.
	Couriers() Couriers
	// Confirm says how a delivery the transport accepted is confirmed.
	Confirm() ConfirmRule
	// Transcript is the transcript a session of the harness writes ("" when
	// unknown).
	Transcript(rec domain.Record) string
	// ExitStart is rec's process start as an ExitWatcher compares it (field
	// 22 of /proc/<pid>/stat, as text; "" when unknown).
	ExitStart(rec domain.Record) string
	// Notes are what a person looking at one of its live, addressable
	// sessions should know (show), e.g. that a transport cannot reach it.
	Notes(rec domain.Record) []string
	// Doctor checks the harness for `peerctl doctor` without sending
	// anything or starting a session; entries are every harness's
	// classified records (it counts its own).
	Doctor(ctx context.Context, entries []domain.Entry) []DoctorRow
	// Home is the folder the harness's registry lives in, and the flag
	// and variable that name it.
	Home() Home
	// Warnings are what a person should know about the harness's settings
	// (a config dir that looks wrong, say); printed once, never fatal.
	Warnings() []string
	// SessionEnv says how a process inside one of the harness's sessions
	// tells which (whoami, doctor); the zero value: it cannot.
	SessionEnv() SessionEnv
}

// Presence is a Harness that can say whether it is on this machine at
// all. One that is not (its program not installed, no state of its own,
// its home not named) could not have had a session: a not_live refusal
// neither names it nor its folders (doctor still does). A Harness without
// the method counts as present.
type Presence interface {
	// Present reports whether the harness's home was named (its flag or
	// variable), its state (home, registry or database folder) exists, or
	// its program is installed (found as it would be run). It stats a few
	// paths and may look along $PATH: for refusals, not for every list.
	Present() bool
}

// Glosser is a Harness that says what `show` rows mean for its sessions
// where its words differ from the common ones (show --explain): its kinds,
// its protocol, the shape of its pidDomain. A Harness without the method
// gets the common glosses.
type Glosser interface {
	// Glosses maps a show row ("kind", "peerProtocol", "pidDomain",
	// "tmux", ...) to what it means for the harness's sessions.
	Glosses() map[string]string
}

// SessionEnv is what a harness sets in the shells it starts that names the
// session they run inside.
type SessionEnv struct {
	// Var is the variable ("CLAUDE_CODE_MESSAGING_SOCKET"); "" for none.
	Var string
	// Socket: Var holds the session's socket path (whoami's "socket-env").
	Socket bool
	// Names reports whether value, Var's, names rec, one of the
	// harness's live records.
	Names func(rec domain.Record, value string) bool
	// Markers are the variables whose presence says a process runs
	// inside one of the harness's sessions; Prefixes, with Markers, select
	// the names (never values) doctor lists.
	Markers, Prefixes []string
}

// Home is where a harness keeps its registry.
type Home struct {
	// Dir is the home folder (Claude Code's config dir, Qwen Code's home).
	Dir string
	// Flag and Env name the flag and the variable that set it
	// ("config-dir", "CLAUDE_CONFIG_DIR").
	Flag, Env string
}

// ConfirmRule is how a harness's deliveries are confirmed.
type ConfirmRule struct {
	// ByReceipt: the harness's own receipt is the confirmation ("delivered"
	// confirms); its transcript is not read and its record publishes no
	// status that a wait could follow. Otherwise the transcript is read
	// for the enqueue line carrying the text (Transcripts.WaitEnqueued)
	// and a wait follows the record's status; a session whose record has
	// not shown a status yet is still starting and holds what is posted to
	// it (domain.Record.Starting): a durable message waits for it to settle.
	ByReceipt bool
	// ReplyEndsTurn (with ByReceipt): the reply a courier of the harness
	// hears to a send (Courier.Inbound) comes when the turn that took the
	// message has ended (Codex's turn/completed, opencode's completed
	// answer), so a wait (send --wait) sends on a courier and ends on it.
	ReplyEndsTurn bool
	// Held and NoReceipt say why a ByReceipt delivery is not confirmed
	// (the receipt said held; it said nothing else); NoWait why the end of
	// a turn cannot be seen (a ByReceipt harness without ReplyEndsTurn: a
	// wait is refused with it, before anything is sent); NoReply, when not
	// "", why the session's own model cannot reply to peerctl (said when a
	// reply wait begins: only a program may answer).
	Held, NoReceipt, NoWait, NoReply string
}

// DoctorRow is one object of `peerctl doctor` that a harness reports.
type DoctorRow struct {
	// Key is the object's key in doctor --json ("claude").
	Key string
	// Health is the row's verdict.
	Health domain.Health
	// JSON is the object in doctor --json.
	JSON any
	// Lines are its rows for people.
	Lines []DoctorLine
	// Problems (each a Fail) and Warnings (each a Warn) join the report's.
	Problems, Warnings []string
	// OnlyProblems, when not "", is the summary line when every problem of
	// the report is this row's, with %s for the count ("1 problem").
	OnlyProblems string
}

// DoctorLine is one row of doctor's table.
type DoctorLine struct {
	Check, Health, Text string
	// Late: printed after the checks of every harness (registry, sockets,
	// reach, session) rather than before them.
	Late bool
}

// HarnessFlag is a flag a harness brings to the command line: its home
// folder, or the program it runs. Its value reaches the harness's
// constructor in HarnessSettings.Flags; an empty value given is a usage
// error (it would silently mean Otherwise).
type HarnessFlag struct {
	Name, Usage string
	// Otherwise says what leaving the flag out means, for messages
	// ("$CLAUDE_CONFIG_DIR, else ~/.claude").
	Otherwise string
	// Env is the variable that sets the value when the flag is not given
	// ("CLAUDE_CONFIG_DIR"); a host's setting of the flag reaches the far
	// side's peerctl through it (peerctl hosts, --host).
	Env string
	// Commands are the commands that take the flag; none: every command.
	Commands []string
	// Program is, for a flag that names a program, the name looked up on
	// PATH when neither the flag nor Env gives one ("claude"); "" for a
	// flag that names a folder.
	Program string
}

// HarnessSettings are what every harness is built from.
type HarnessSettings struct {
	// Flags holds the HarnessFlag values given, by name ("" or absent:
	// not given), and the settings a sender's request carried
	// (HarnessPlugin.Carry).
	Flags map[string]string
	// Getenv reads the environment for defaults (nil: os.Getenv).
	Getenv func(string) string
	// Env is the environment the programs a harness starts begin from
	// (nil: os.Environ()).
	Env []string
	// Timeout bounds one delivery (0: the transport's default).
	Timeout time.Duration
	// ReceiptWindow is how long a transport waits for the session's
	// receipt (0: its default; negative: not at all).
	ReceiptWindow time.Duration
	// From is the sender's display name that receivers see (default
	// "peerctl").
	From string
	// Log hears the send trail at debug level (--debug); nil: silent.
	Log *slog.Logger
}

// HarnessPlugin describes a harness before it is built: the flags it
// brings and the names of its transports (so that a command line can be
// checked before anything is built), and its constructor.
type HarnessPlugin struct {
	Kind  domain.Harness
	Flags []HarnessFlag
	// Transports are the names of the harness's transports, in the order
	// of Harness.Transports (the default first).
	Transports []TransportName
	New        func(HarnessSettings) (Harness, error)
	// Env are the variables the harness reads besides its flags' (Flags'
	// Env), whose values a long-running service needs as the shell has
	// them (serve --print-unit writes them); SecretEnv those it reads
	// that hold a secret (named to the user, never written to a file).
	Env, SecretEnv []string
	// Carry, when set, is what a send handed to peerctl serve carries for
	// the harness besides its flags' values: each a setting's name and its
	// value as the harness resolves it from the sender's environment
	// (getenv), never the environment itself nor a secret (opencode's
	// database path, resolved from $OPENCODE_DB, $XDG_DATA_HOME and
	// $HOME). They reach New in HarnessSettings.Flags under their names,
	// as a flag's value does, so that the service finds what the sender's
	// own command would have; a name absent: the harness resolves it from
	// the environment it is given.
	Carry func(getenv func(string) string) map[string]string
}

// TransportName is a transport's name and whether a reply can come back on
// it (it is also the harness's long-lived courier: send --await-reply).
type TransportName struct {
	Name    string
	Replies bool
}
