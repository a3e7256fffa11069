// Package opencode is the opencode harness (opencode-ai 1.18.33;
// docs/OPENCODE.md): one plug-in (a ports.Harness) made of the registry
// (the sessions a live opencode server of this user can reach, found in
// /proc and asked over its HTTP API), the process liveness check, the
// prompt transport (POST /session/{id}/prompt_async, confirmed by
// opencode's own message.updated event; also the long-lived courier that
// hears the answer on GET /event), and its doctor row. It registers its
// rules with the domain (Kind), so nothing outside this package names it
// but the plug-in list.
package opencode

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Variables opencode-ai 1.18.33 reads for its server's password, which
// peerctl reads too (never logged, never shown).
const (
	PasswordEnv = "OPENCODE_SERVER_PASSWORD"
	UserEnv     = "OPENCODE_SERVER_USERNAME"
)

// Program is the opencode program a person runs (opencode-ai's launcher
// on $PATH); its presence says opencode is installed.
const Program = "opencode"

// EndpointPrefix starts every opencode endpoint of protocol version 1:
//
//	opencode-peer:v1:<pid>:<session id>:<address>
//
// the address the one dialled (DialAddr), escaped as cc-peer endpoints
// are: 127.0.0.1%3A4096, [%3A%3A1]%3A4096. It pins the session id and the
// server (the pid of the process that listens, and its address): one
// server serves every session of its folder, so the session id says
// which.
const EndpointPrefix = "opencode-peer:v1:"

// Kind is opencode's word in the domain's set of harnesses ("opencode"),
// registered with its rules.
var Kind = domain.RegisterHarness(domain.HarnessSpec{
	Word: "opencode", Title: "opencode", Prefix: EndpointPrefix, Pins: "session id",
	ValidKey: func(key string) error {
		if !ValidSessionID(key) {
			return fmt.Errorf("not an opencode session id (ses_ and 26 letters or digits)")
		}
		return nil
	},
	SharedSocket:  true,
	NetworkSocket: true,
	ManyPerPID:    true,
	Unaddressable: unaddressable,
})

// FixPlainTUI is what a person does to make a plain TUI's sessions
// reachable (opencode-ai 1.18.33).
const FixPlainTUI = "start it as `opencode --port 0`, or run `opencode serve` and `opencode attach http://127.0.0.1:<port>`"

// unaddressable says why a live opencode record cannot be sent to.
func unaddressable(r domain.Record) string {
	switch {
	case r.Kind == KindPlainTUI:
		return "a plain opencode TUI listens on nothing and cannot be reached: " + FixPlainTUI
	case r.Kind == KindLocked:
		return (&PasswordError{Addr: r.SocketPath}).Error()
	case r.Kind == KindRefused:
		return (&PasswordError{Addr: r.SocketPath, Given: true}).Error()
	case r.SocketPath == "":
		return "the opencode process listens on no port peerctl can see (starting, or in another network namespace)"
	case r.SessionID == "":
		return "the opencode server has no session in " + r.Cwd + " yet"
	case !ValidSessionID(r.SessionID):
		return fmt.Sprintf("session id %q is not an opencode session id", r.SessionID)
	case !loopbackAddr(r.SocketPath):
		return fmt.Sprintf("server address %q is not a loopback address and port (127.0.0.1:<port>, [::1]:<port>)", r.SocketPath)
	}
	return ""
}

// loopbackAddr reports whether a is a loopback address and port, written
// as DialAddr writes it ("127.0.0.2:4096", "[::1]:4096").
func loopbackAddr(a string) bool {
	ap, err := netip.ParseAddrPort(a)
	return err == nil && ap.Addr().IsLoopback() && !ap.Addr().Is4In6() && ap.Addr().Zone() == "" && ap.Port() != 0 && ap.String() == a
}

// Plugin describes the harness for the wiring and the command line.
var Plugin = ports.HarnessPlugin{
	Kind:       Kind,
	Transports: []ports.TransportName{{Name: PromptName, Replies: true}},
	New:        func(s ports.HarnessSettings) (ports.Harness, error) { return New(s) },
	Env:        []string{DBEnv, UserEnv},
	SecretEnv:  []string{PasswordEnv},
	Carry: func(getenv func(string) string) map[string]string {
		cwd, _ := os.Getwd()
		return map[string]string{SettingDB: Database(withHome(getenv), cwd)}
	},
}

// SettingDB is the setting a send handed to peerctl serve carries
// (ports.HarnessPlugin.Carry): the sender's opencode database, a whole
// path (Database). The service's harness uses it instead of its own
// environment's.
const SettingDB = "opencode-db"

// Harness is opencode's plug-in. Build it with New.
type Harness struct {
	registry *Registry
	live     *procliveness.Checker
	prompt   *Prompt
	auth     Auth
	db       string
	named    bool // the database given ($OPENCODE_DB)
}

var _ ports.Harness = (*Harness)(nil)

// New builds the parts; the database whose processes are served is the
// one the settings carry (SettingDB), else the one $OPENCODE_DB,
// $XDG_DATA_HOME and $HOME name (Database); the password from
// $OPENCODE_SERVER_PASSWORD (user $OPENCODE_SERVER_USERNAME, default
// "opencode"). Nothing is started.
func New(s ports.HarnessSettings) (*Harness, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	h := &Harness{live: procliveness.New(), auth: NewAuth(getenv(UserEnv), getenv(PasswordEnv))}
	dom, _ := h.live.Domain()
	cwd, _ := os.Getwd()
	h.db = s.Flags[SettingDB]
	if h.db == "" {
		h.db = Database(withHome(getenv), cwd)
	}
	h.named = getenv(DBEnv) != ""
	h.registry = NewRegistry(h.db, h.auth, dom)
	h.prompt = NewPrompt(Config{Auth: h.auth, From: s.From, Timeout: s.Timeout, Window: s.ReceiptWindow, Log: s.Log})
	// A send resolves its target on a fresh read: its delivery reuses
	// the connection that read proved the server's.
	h.registry.kept = &servers{}
	h.prompt.kept = h.registry.kept
	return h, nil
}

// withHome is getenv with HOME defaulting to os.UserHomeDir, as Codex's
// home does when the settings name none.
func withHome(getenv func(string) string) func(string) string {
	return func(k string) string {
		v := getenv(k)
		if k == "HOME" && v == "" {
			v, _ = os.UserHomeDir()
		}
		return v
	}
}

var _ ports.Presence = (*Harness)(nil)

// Present: the database named or its folder there, or the opencode
// program found.
func (h *Harness) Present() bool {
	dir := ""
	if h.db != "" {
		dir = filepath.Dir(h.db)
	}
	return presence.Of(h.named, Program, dir)
}

// Kind is opencode's Kind.
func (h *Harness) Kind() domain.Harness { return Kind }

// Registry reads the sessions live opencode servers reach.
func (h *Harness) Registry() ports.Registry { return h.registry }

// Liveness checks the server's process (pid alive, start unchanged).
func (h *Harness) Liveness() ports.Liveness { return h.live }

// Transports is the prompt transport.
func (h *Harness) Transports() []ports.Transport { return []ports.Transport{h.prompt} }

// Couriers are the event-stream listeners that hear a turn's answer.
func (h *Harness) Couriers() ports.Couriers { return h.prompt }

// Confirm: opencode's receipt (message.updated for peerctl's id) is the
// confirmation, and the end of the turn is the completed answer to it on
// the server's event stream, which a courier hears as the reply (a wait
// ends on it).
func (h *Harness) Confirm() ports.ConfirmRule {
	return ports.ConfirmRule{ByReceipt: true, ReplyEndsTurn: true,
		Held:      "opencode holds it",
		NoReceipt: "opencode accepted it (204) without echoing the message id on its event stream in time"}
}

// Transcript: opencode keeps a session's messages in its database, read
// through the server (GET /session/{id}/message), not a file.
func (h *Harness) Transcript(domain.Record) string { return "" }

// ExitStart is the server process's start ticks.
func (h *Harness) ExitStart(rec domain.Record) string { return rec.ProcStart }

// Notes say what a person should know about a server's session.
func (h *Harness) Notes(rec domain.Record) []string {
	return []string{fmt.Sprintf("reached through the opencode %s pid %d at %s; opencode's database is shared by all its processes, so this session is live because that server serves its folder, not because anything shows it", rec.Kind, rec.PID, rec.SocketPath)}
}

// Home is the folder of the opencode database whose processes are served
// (never read: its processes are found in /proc), set by $XDG_DATA_HOME.
func (h *Harness) Home() ports.Home { return ports.Home{Dir: filepath.Dir(h.db), Env: "XDG_DATA_HOME"} }

// Warnings: none.
func (h *Harness) Warnings() []string { return nil }

// PIDEnv is the variable opencode sets in its own environment at start,
// to its pid, which the shells its tools run inherit: opencode-ai 1.18.33
// sets OPENCODE=1 and OPENCODE_PID=<pid> (its CLI's start-up middleware;
// measured in the shell of its bash tool by the live whoami test; no
// variable names a session).
const PIDEnv = "OPENCODE_PID"

// SessionEnv: $OPENCODE_PID names the opencode process a shell runs under.
// One server holds many sessions, so it names a session only when that
// process has exactly one live (whoami says which, or that it cannot tell).
func (h *Harness) SessionEnv() ports.SessionEnv {
	return ports.SessionEnv{Var: PIDEnv,
		Names: func(rec domain.Record, value string) bool {
			pid, err := strconv.Atoi(value)
			return err == nil && pid > 0 && rec.PID == pid
		},
		Markers: []string{"OPENCODE", PIDEnv}}
}

var _ ports.Glosser = (*Harness)(nil)

// Glosses says what show's rows mean for an opencode session where Claude
// Code's words would mislead (show --explain).
func (h *Harness) Glosses() map[string]string {
	return map[string]string{
		"kind": "the opencode process that serves the session: " + KindServe + " (opencode serve), " + KindTUI + " (a TUI with its own server), " +
			KindPlainTUI + ", " + KindLocked + " or " + KindRefused + " (docs/OPENCODE.md)",
		"peerProtocol": "opencode publishes no protocol version (0): send reaches a session through its server's HTTP API, and addressable says whether a message can reach it",
		"pidDomain":    "this machine's pid domain (machine-id, namespace inode): peerctl found the process in this machine's /proc",
		"tmux":         "opencode names no tmux pane",
	}
}
