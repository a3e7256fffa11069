// Package qwencode is the Qwen Code harness: one plug-in (a ports.Harness)
// made of the registry reader (qwenregistry, <qwen home>/sessions), its
// liveness rules (qwenregistry.Liveness over the process checker), the
// inbox transport (qweninbox, the default and only one) and its reply
// inbox (replies), confirmation by the session's own receipt, and the
// --qwen-home and --qwen flags.
package qwencode

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/qwencli"
	"github.com/peerctl/peerctl/adapters/qweninbox"
	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Flag names.
const (
	// FlagHome is Qwen Code's home folder (every command).
	FlagHome = "qwen-home"
	// FlagProgram is the qwen program doctor probes.
	FlagProgram = "qwen"
)

// Plugin describes the harness for the wiring and the command line.
var Plugin = ports.HarnessPlugin{
	Kind: qwenregistry.Kind,
	Flags: []ports.HarnessFlag{
		{Name: FlagHome, Usage: "Qwen home (default $QWEN_HOME, else ~/.qwen)",
			Otherwise: "$QWEN_HOME, else ~/.qwen", Env: "QWEN_HOME"},
		{Name: FlagProgram, Usage: "qwen program to check (default $PEERCTL_QWEN, else qwen on PATH)",
			Otherwise: "$PEERCTL_QWEN, else qwen on PATH", Env: "PEERCTL_QWEN", Commands: []string{"doctor"}, Program: "qwen"},
	},
	Transports: []ports.TransportName{{Name: qweninbox.Name, Replies: true}},
	New:        func(s ports.HarnessSettings) (ports.Harness, error) { return New(s) },
}

// Harness is Qwen Code's plug-in. Build it with New.
type Harness struct {
	home     string
	named    bool // the home given (flag or variable)
	registry ports.Registry
	live     *qwenregistry.Liveness
	inbox    *qweninbox.Transport
	prober   *qwencli.Prober
}

var _ ports.Harness = (*Harness)(nil)

// New resolves the home (--qwen-home, else $QWEN_HOME, else ~/.qwen:
// qwenregistry.Home) and the qwen program (--qwen, else $PEERCTL_QWEN,
// else qwen on PATH) and builds the parts. Nothing is started. A home
// that cannot be located (no $QWEN_HOME and no $HOME) is this harness's
// trouble alone: its registry reports the error on every read (listed
// unread), and the other harnesses work all the same.
func New(s ports.HarnessSettings) (*Harness, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var reg ports.Registry
	home, err := qwenregistry.Home(s.Flags[FlagHome], getenv)
	if err != nil {
		reg = ports.Unlocated{Of: qwenregistry.Kind, Err: err}
	} else {
		reg = qwenregistry.New(qwenregistry.SessionsDir(home))
	}
	program := s.Flags[FlagProgram]
	if program == "" {
		program = getenv(qwencli.ProgramEnv)
	}
	return &Harness{
		home:     home,
		named:    s.Flags[FlagHome] != "" || getenv(qwenregistry.HomeEnv) != "",
		registry: reg,
		live:     qwenregistry.NewLiveness(procliveness.New(), "/proc"),
		inbox:    qweninbox.New(qweninbox.Config{Timeout: s.Timeout, Window: s.ReceiptWindow, FromName: s.From, Log: s.Log}),
		prober:   &qwencli.Prober{Program: program, Home: home},
	}, nil
}

var _ ports.Presence = (*Harness)(nil)

// Present: the home named or there, or the qwen program found.
func (h *Harness) Present() bool {
	program := h.prober.Program
	if program == "" {
		program = qwencli.DefaultProgram
	}
	return presence.Of(h.named, program, h.home)
}

// Kind is qwenregistry.Kind.
func (h *Harness) Kind() domain.Harness { return qwenregistry.Kind }

// Registry reads <qwen home>/sessions.
func (h *Harness) Registry() ports.Registry { return h.registry }

// Liveness checks records with Qwen Code's rules (qwenregistry.Liveness).
func (h *Harness) Liveness() ports.Liveness { return h.live }

// Transports is the inbox.
func (h *Harness) Transports() []ports.Transport { return []ports.Transport{h.inbox} }

// Couriers are the inbox transport's reply inboxes.
func (h *Harness) Couriers() ports.Couriers { return h.inbox }

// Confirm: Qwen Code's receipt is the confirmation (0.24.4: its transcript
// is not read), and its records publish no status to wait on.
func (h *Harness) Confirm() ports.ConfirmRule {
	return ports.ConfirmRule{ByReceipt: true,
		Held:      "Qwen Code holds it for its user to accept or deny (/peers)",
		NoReceipt: "no receipt from Qwen Code",
		NoWait: "Qwen Code publishes no status and its receipt says nothing of a turn's end (0.24.4): " +
			"peerctl cannot see when the turn on the message ends",
		NoReply: "a Qwen Code session's model cannot reply to peerctl (its send_message tool reaches only " +
			"sessions in Qwen Code's registry, 0.24.4): only a program that speaks its protocol can"}
}

// Transcript is TranscriptPath under the home.
func (h *Harness) Transcript(rec domain.Record) string {
	return TranscriptPath(h.home, rec.Cwd, rec.SessionID)
}

// TranscriptPath is a Qwen Code session's chat transcript (0.24.4):
// <qwen home>/projects/<cwd with every "/" made "-">/chats/<sessionId>.jsonl,
// "" when home, cwd or the session id is unknown.
func TranscriptPath(home, cwd, sessionID string) string {
	if home == "" || cwd == "" || sessionID == "" || strings.ContainsAny(sessionID, "/\\") {
		return ""
	}
	return filepath.Join(home, "projects", strings.ReplaceAll(cwd, "/", "-"), "chats", sessionID+".jsonl")
}

// ExitStart is the ticks of procStart: Qwen Code writes "<boot_id>:<ticks>".
func (h *Harness) ExitStart(rec domain.Record) string {
	start, _, _ := rec.CheckedStart()
	if _, ticks, ok := strings.Cut(start, ":"); ok {
		return ticks
	}
	return start
}

// Notes: none.
func (h *Harness) Notes(domain.Record) []string { return nil }

// Home is the Qwen home, named by --qwen-home and $QWEN_HOME.
func (h *Harness) Home() ports.Home {
	return ports.Home{Dir: h.home, Flag: FlagHome, Env: qwenregistry.HomeEnv}
}

// Warnings: none.
func (h *Harness) Warnings() []string { return nil }

// SessionEnv: none measured (a Qwen Code shell is found by its parents).
func (h *Harness) SessionEnv() ports.SessionEnv { return ports.SessionEnv{} }

var _ ports.Glosser = (*Harness)(nil)

// Glosses says what show's rows mean for a Qwen Code session where Claude
// Code's words would mislead (show --explain).
func (h *Harness) Glosses() map[string]string {
	return map[string]string{
		"kind":         "tui is an interactive Qwen Code session a person uses; Qwen Code's other kinds run without one",
		"peerProtocol": "Qwen Code's record publishes no protocol version (0): send speaks its inbox protocol, and addressable says whether a message can reach it",
		"pidDomain":    "the pid namespace (its inode) the pid is counted in: a pid from another container says nothing about this one's processes",
		"tmux":         "Qwen Code's record names no tmux pane",
	}
}
