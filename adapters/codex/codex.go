// Package codex is the Codex CLI harness (Codex 0.171.0; docs/CODEX.md):
// one plug-in (a ports.Harness) made of the registry (the threads a live
// Codex process has open: the app-server daemon's loaded threads that a
// client runs beside, and the threads --no-daemon TUIs hold), the process
// liveness check, the app-server transport (the default; it is also the
// long-lived courier that hears the answer) and the queue transport
// (codex queue), confirmation by Codex's own receipt, and the
// --codex-home and --codex flags.
package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Flag names and variables.
const (
	// FlagHome is Codex's home folder (every command).
	FlagHome = "codex-home"
	// FlagProgram is the codex program (the queue transport, doctor).
	FlagProgram = "codex"
	// HomeEnv is the variable Codex reads its home from.
	HomeEnv = "CODEX_HOME"
	// ThreadEnv is the variable Codex 0.171.0 sets, in the shells its
	// exec_command tool starts, to the thread's id (measured; it also sets
	// CODEX_SESSION_ID to the same id).
	ThreadEnv = "CODEX_THREAD_ID"
)

// Plugin describes the harness for the wiring and the command line.
var Plugin = ports.HarnessPlugin{
	Kind: Kind,
	Flags: []ports.HarnessFlag{
		{Name: FlagHome, Usage: "Codex home (default $CODEX_HOME, else ~/.codex)",
			Otherwise: "$CODEX_HOME, else ~/.codex", Env: HomeEnv},
		{Name: FlagProgram, Usage: "codex program of --transport queue (default $PEERCTL_CODEX, else on PATH)",
			Otherwise: "$PEERCTL_CODEX, else codex on PATH", Env: ProgramEnv, Commands: []string{"send", "relay", "mcp", "doctor"}, Program: "codex"},
	},
	Transports: []ports.TransportName{{Name: AppServerName, Replies: true}, {Name: QueueName}},
	New:        func(s ports.HarnessSettings) (ports.Harness, error) { return New(s) },
}

// Harness is Codex's plug-in. Build it with New.
type Harness struct {
	home     string
	named    bool // the home given (flag or variable)
	program  string
	registry ports.Registry
	live     *procliveness.Checker
	app      *AppServer
	queue    *Queue
}

var _ ports.Harness = (*Harness)(nil)

// Home resolves the Codex home: flag, else $CODEX_HOME, else ~/.codex.
func Home(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if v := getenv(HomeEnv); v != "" {
		return filepath.Abs(v)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate Codex's home (no --codex-home, no $CODEX_HOME): %w", err)
	}
	return filepath.Join(home, ".codex"), nil
}

// New resolves the home and the program and builds the parts. Nothing is
// started. A home that cannot be located is this harness's trouble alone:
// its registry reports it on every read.
func New(s ports.HarnessSettings) (*Harness, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	h := &Harness{live: procliveness.New()}
	memo := &daemonMemo{}
	home, err := Home(s.Flags[FlagHome], getenv)
	h.named = s.Flags[FlagHome] != "" || getenv(HomeEnv) != ""
	if err != nil {
		h.registry = ports.Unlocated{Of: Kind, Err: err}
	} else {
		h.home = home
		dom, _ := h.live.Domain()
		reg := NewRegistry(home, version(), dom)
		reg.memo = memo
		h.registry = reg
	}
	h.program = s.Flags[FlagProgram]
	if h.program == "" {
		h.program = getenv(ProgramEnv)
	}
	cfg := Config{Home: home, Version: version(), From: s.From, Timeout: s.Timeout, Window: s.ReceiptWindow,
		Program: h.program, Env: s.Env, Log: s.Log, memo: memo}
	h.app, h.queue = NewAppServer(cfg), NewQueue(cfg)
	return h, nil
}

// version is peerctl's module version ("dev" when unknown), read once.
var version = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
})

var _ ports.Presence = (*Harness)(nil)

// Present: the home named or there, or the codex program found.
func (h *Harness) Present() bool {
	program := h.program
	if program == "" {
		program = DefaultProgram
	}
	return presence.Of(h.named, program, h.home)
}

// Kind is Kind.
func (h *Harness) Kind() domain.Harness { return Kind }

// Registry reads the threads a live Codex process has open (Registry).
func (h *Harness) Registry() ports.Registry { return h.registry }

// Liveness checks the holder's process (pid alive, start unchanged).
func (h *Harness) Liveness() ports.Liveness { return h.live }

// Transports are the app-server (default) and the queue.
func (h *Harness) Transports() []ports.Transport { return []ports.Transport{h.app, h.queue} }

// Couriers are the app-server connections that hear a turn's answer.
func (h *Harness) Couriers() ports.Couriers { return h.app }

// Confirm: Codex's receipt is the confirmation (turn/started), and the
// end of the turn is the app-server's turn/completed, which a courier
// hears as the reply (a wait ends on it).
func (h *Harness) Confirm() ports.ConfirmRule {
	return ports.ConfirmRule{ByReceipt: true, ReplyEndsTurn: true,
		Held:      "Codex holds it",
		NoReceipt: "Codex accepted it without saying a turn started (the receipt says when it runs)"}
}

// Transcript is the thread's rollout (the record's Path).
func (h *Harness) Transcript(rec domain.Record) string { return rec.Path }

// ExitStart is the holder's start ticks.
func (h *Harness) ExitStart(rec domain.Record) string { return rec.ProcStart }

// Notes say how a --no-daemon thread is reached.
func (h *Harness) Notes(rec domain.Record) []string {
	if rec.Kind == KindNoDaemon {
		return []string{"held by a TUI started with --no-daemon: the app-server transport cannot reach it; send --transport queue does"}
	}
	return nil
}

// Home is the Codex home, named by --codex-home and $CODEX_HOME.
func (h *Harness) Home() ports.Home { return ports.Home{Dir: h.home, Flag: FlagHome, Env: HomeEnv} }

// Warnings: none.
func (h *Harness) Warnings() []string { return nil }

// SessionEnv: $CODEX_THREAD_ID names the thread (measured on 0.171.0: the
// exec_command tool's shell runs in a sandbox of its own pid namespace, so
// its parents do not lead to the TUI; the variable does). CODEX_SESSION_ID
// carries the same id.
func (h *Harness) SessionEnv() ports.SessionEnv {
	return ports.SessionEnv{Var: ThreadEnv,
		Names:   func(rec domain.Record, value string) bool { return rec.SessionID != "" && rec.SessionID == value },
		Markers: []string{ThreadEnv, "CODEX_SESSION_ID"}}
}

var _ ports.Glosser = (*Harness)(nil)

// Glosses says what show's rows mean for a Codex thread where Claude
// Code's words would mislead (show --explain).
func (h *Harness) Glosses() map[string]string {
	return map[string]string{
		"kind": "who holds the thread open: " + KindClient + " (Codex's app-server daemon, with a client such as the TUI, pid PID), " +
			KindNoDaemon + " (a TUI started with --no-daemon), " + KindExec + " (a headless run: never messaged)",
		"peerProtocol": "Codex publishes no protocol version (0): send reaches a thread through Codex's app-server, and addressable says whether a message can reach it",
		"pidDomain":    "this machine's pid domain (machine-id, namespace inode): peerctl found the process in this machine's /proc",
		"tmux":         "Codex names no tmux pane for a thread",
	}
}
