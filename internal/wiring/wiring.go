// Package wiring is peerctl's composition root: the one list of harness
// plug-ins and the adapters bound to app's ports, for the programs in
// cmd/ and for a host program that embeds peerctl. app/ names no adapter
// (docs/DESIGN.md, rule 11); everything that does is here.
//
// A host embeds peerctl with fx:
//
//	fxApp := fx.New(wiring.Module, fx.Supply(app.Config{...}), fx.Populate(&svc))
package wiring

import (
	"errors"
	"log/slog"
	"os"
	"slices"

	"go.uber.org/fx"

	"github.com/peerctl/peerctl/adapters/claudecode"
	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/adapters/fswatch"
	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/adapters/policyfile"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/adapters/qwencode"
	"github.com/peerctl/peerctl/adapters/transcript"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// plugins are the harnesses peerctl serves. A harness is added here, with
// one line: the graph, the command line's flags and help, the hosts file's
// keys, the MCP schemas and the transport names all come from this list.
var plugins = app.Catalog{
	claudecode.Plugin,
	qwencode.Plugin,
	codex.Plugin,
	opencode.Plugin,
}

// Plugins lists the harness plug-ins, for a command line that adds their
// flags (ports.HarnessFlag) before the graph is built.
func Plugins() app.Catalog { return slices.Clone(plugins) }

// Module provides *app.Service and every port: the harness plug-ins
// (app.Plug), the use cases' graph (app.Graph) and the adapters for
// processes, transcripts and watching. Supply an app.Config; swap any port
// with fx.Replace or fx.Decorate.
var Module = fx.Module("peerctl",
	app.Graph,
	app.Plug(plugins),
	fx.Provide(
		newLocalPorts,
		func(folders ports.FolderWatcher, log *slog.Logger) ports.Transcripts {
			return NewTranscripts(folders, log)
		},
		func() ports.FolderWatcher { return NewFolderWatcher() },
		func() ports.ExitWatcher { return NewExitWatcher() },
	),
)

// ReadModule is Module for the commands that only read the registry
// (list, enrich, completion): app.ReadGraph over the same plug-ins. It is
// a plain list of options, not an fx.Module: a module is a dig scope of
// its own (maps and a seeded random source) built on every fx.New.
var ReadModule = fx.Options(
	app.ReadGraph,
	app.Plug(plugins),
	fx.Provide(newLocalPorts),
)

// localPorts are this machine's process tree (NewProcesses) and the trust
// policy's file (NewPolicy) bound to their ports, given by one
// constructor: fx.New's cost is per constructor (app.Plug says more). The
// modules bind their ports with constructors that return them, not with
// fx.Annotate and fx.As, which cost each fx.New a dig container and a
// reflect.MakeFunc apiece.
type localPorts struct {
	fx.Out
	Processes ports.Processes
	Policy    ports.Policy
}

func newLocalPorts(cfg app.Config) localPorts {
	return localPorts{Processes: NewProcesses(), Policy: NewPolicy(cfg)}
}

// NewTranscripts reads transcripts, told of appends by the folder watcher.
func NewTranscripts(folders ports.FolderWatcher, log *slog.Logger) *transcript.Reader {
	return transcript.New(folders, transcript.WithLog(log))
}

// NewFolderWatcher watches folders with fsnotify (polling fallback).
func NewFolderWatcher() *fswatch.Folder { return fswatch.NewFolder() }

// NewExitWatcher watches processes end with pidfds (polling fallback).
func NewExitWatcher() *fswatch.Exits { return fswatch.NewExits() }

// NewPolicy is the trust policy's file (policyfile.Path), read on every
// send; it is this user's own. With no config folder to find (no HOME,
// no XDG_CONFIG_HOME) there is no file: the defaults decide.
func NewPolicy(cfg app.Config) *policyfile.File {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path, _ := policyfile.Path(getenv)
	return policyfile.New(path, os.Getuid())
}

// NewProcesses reads the process tree from /proc (for whoami and doctor).
func NewProcesses() ports.Processes { return procliveness.NewTree("") }

// Cause digs the root cause out of fx's wrapped constructor errors (a
// graph that did not build). It stops at a *domain.Refusal: its reason is
// the exit code and its detail the words, while its own cause
// (Refusal.Err, an OS error say) is neither.
func Cause(err error) error {
	for {
		if _, ok := err.(*domain.Refusal); ok {
			return err
		}
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
