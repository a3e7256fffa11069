// Package claudecode is the Claude Code harness: one plug-in (a
// ports.Harness) made of the registry reader (fsregistry, <config
// dir>/sessions), the process liveness check (procliveness), the courier
// (courierexec, the default transport) and socket (socketframe)
// transports, the courier's long-lived couriers (replies), confirmation
// from the session's transcript, and the --config-dir and --claude flags.
package claudecode

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/socketframe"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Flag names.
const (
	// FlagConfigDir is Claude Code's config dir (every command).
	FlagConfigDir = "config-dir"
	// FlagProgram is the courier program (the commands that deliver or check it).
	FlagProgram = "claude"
	// ConfigDirEnv is the variable Claude Code reads its config dir from.
	ConfigDirEnv = "CLAUDE_CONFIG_DIR"
	// SocketEnv is the variable Claude Code 2.1.328 sets in the shells it
	// starts (its Bash tool and "!" shell mode) to the session's own
	// messaging socket.
	SocketEnv = "CLAUDE_CODE_MESSAGING_SOCKET"
)

// Plugin describes the harness for the wiring and the command line.
var Plugin = ports.HarnessPlugin{
	Kind: domain.HarnessClaudeCode,
	Flags: []ports.HarnessFlag{
		{Name: FlagConfigDir, Usage: "Claude Code config dir (default $CLAUDE_CONFIG_DIR, else ~/.claude)",
			Otherwise: "$CLAUDE_CONFIG_DIR, else ~/.claude", Env: "CLAUDE_CONFIG_DIR"},
		{Name: FlagProgram, Usage: "courier program (default $PEERCTL_CLAUDE, else claude on PATH)",
			Otherwise: "$PEERCTL_CLAUDE, else claude on PATH", Env: "PEERCTL_CLAUDE", Commands: []string{"send", "relay", "mcp", "doctor"}, Program: courierexec.DefaultProgram},
	},
	Transports: []ports.TransportName{{Name: courierexec.Name, Replies: true}, {Name: socketframe.Name}},
	New:        func(s ports.HarnessSettings) (ports.Harness, error) { return New(s) },
}

// Harness is Claude Code's plug-in. Build it with New.
type Harness struct {
	configDir string
	// named: the config dir was given (flag or variable); program: the
	// courier program as it is run (for Present).
	named   bool
	program string
	// programNamed: the courier program was given (--claude or
	// $PEERCTL_CLAUDE), not the default claude on PATH.
	programNamed bool
	warnings     []string
	registry     ports.Registry
	live         *procliveness.Checker
	courier      *courierexec.Transport
	socket       *socketframe.Transport
}

var _ ports.Harness = (*Harness)(nil)

// New resolves the config dir (--config-dir, else $CLAUDE_CONFIG_DIR, else
// ~/.claude: fsregistry.ConfigDir) and the courier program (--claude, else
// $PEERCTL_CLAUDE, else claude on PATH) and builds the parts. Nothing is
// started. The error is the home directory's lookup failing.
func New(s ports.HarnessSettings) (*Harness, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	// A config dir that cannot be located (no flag, no $CLAUDE_CONFIG_DIR,
	// no $HOME) is this harness's trouble alone: its registry reports the
	// error on every read (listed unread), the other harnesses work.
	var reg ports.Registry
	dir, warnings, err := fsregistry.ConfigDir(s.Flags[FlagConfigDir], getenv)
	if err != nil {
		reg = ports.Unlocated{Of: domain.HarnessClaudeCode, Err: err}
	} else {
		reg = fsregistry.New(fsregistry.SessionsDir(dir))
	}
	program := s.Flags[FlagProgram]
	if program == "" {
		program = getenv(courierexec.ProgramEnv)
	}
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	programNamed := program != ""
	if program == "" {
		program = courierexec.DefaultProgram
	}
	return &Harness{
		configDir:    dir,
		named:        s.Flags[FlagConfigDir] != "" || getenv(ConfigDirEnv) != "",
		program:      program,
		programNamed: programNamed,
		warnings:     warnings,
		registry:     reg,
		live:         procliveness.New(),
		courier:      courierexec.New(courierexec.Config{Program: program, Timeout: s.Timeout, Env: env, Name: s.From, Log: s.Log}),
		socket:       &socketframe.Transport{Timeout: s.Timeout, Log: s.Log},
	}, nil
}

var _ ports.Presence = (*Harness)(nil)

// Present: the config dir named or there, or the claude program found.
func (h *Harness) Present() bool { return presence.Of(h.named, h.program, h.configDir) }

// Kind is domain.HarnessClaudeCode.
func (h *Harness) Kind() domain.Harness { return domain.HarnessClaudeCode }

// Registry reads <config dir>/sessions.
func (h *Harness) Registry() ports.Registry { return h.registry }

// Liveness checks records against this machine's processes.
func (h *Harness) Liveness() ports.Liveness { return h.live }

// Transports are the courier (default) and the socket.
func (h *Harness) Transports() []ports.Transport {
	return []ports.Transport{h.courier, h.socket}
}

// Couriers are the courier's long-lived couriers.
func (h *Harness) Couriers() ports.Couriers { return h.courier }

// Confirm: the session's transcript confirms, its record's status is waited on.
func (h *Harness) Confirm() ports.ConfirmRule { return ports.ConfirmRule{} }

// Transcript is domain.TranscriptPath under the config dir.
func (h *Harness) Transcript(rec domain.Record) string {
	return domain.TranscriptPath(h.configDir, rec.Cwd, rec.SessionID)
}

// ExitStart is the start the record's liveness check compares
// (domain.Record.CheckedStart).
func (h *Harness) ExitStart(rec domain.Record) string {
	start, _, _ := rec.CheckedStart()
	return start
}

// Notes says when the session's peer protocol is newer than the socket
// transport speaks.
func (h *Harness) Notes(rec domain.Record) []string {
	if rec.PeerProtocol > socketframe.MaxPeerProtocol {
		return []string{fmt.Sprintf("peer protocol %d is newer than the socket transport knows (%d): send --transport socket refuses it (harness_unsupported); the courier leaves the protocol to Claude Code", rec.PeerProtocol, socketframe.MaxPeerProtocol)}
	}
	return nil
}

// Home is the config dir, named by --config-dir and $CLAUDE_CONFIG_DIR.
func (h *Harness) Home() ports.Home {
	return ports.Home{Dir: h.configDir, Flag: FlagConfigDir, Env: ConfigDirEnv}
}

// Warnings are the config dir's (a literal "~" no shell expanded).
func (h *Harness) Warnings() []string { return h.warnings }

// SessionEnv: $CLAUDE_CODE_MESSAGING_SOCKET names the session by its
// socket. The markers are the variables Claude Code 2.1.328 sets in the
// shells it starts (Bash tool, "!" shell mode); provider and credential
// settings (CLAUDE_CODE_USE_BEDROCK, ...) do not count. Doctor lists the
// names of CLAUDECODE and CLAUDE_CODE_* (never values: some are secrets,
// CLAUDE_CODE_MESSAGING_TOKEN).
func (h *Harness) SessionEnv() ports.SessionEnv {
	return ports.SessionEnv{Var: SocketEnv, Socket: true,
		Names: func(rec domain.Record, value string) bool {
			return rec.SocketPath != "" && filepath.Clean(rec.SocketPath) == filepath.Clean(value)
		},
		Markers: []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID", SocketEnv,
			"CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_EXECPATH"},
		Prefixes: []string{"CLAUDE_CODE_"}}
}
