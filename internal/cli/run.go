// Package cli is peerctl's command line: cobra commands over the use cases
// of package app, one exit-code table, and the JSON documents of
// docs/OUTPUT.md. cmd/peerctl runs it; cmd/peerctl-mcp runs it with the MCP
// server, the fleet's bus client, the outbox's store and the jq filter
// linked in (see MCPServer, wiring.Bus, wiring.Store and JQ).
//
// Its shape is gh's: a factory holds what commands need (the streams, this
// process, the global flags) and builds their dependencies lazily from
// internal/wiring, which makes every adapter; iostreams are the streams and
// how output is shaped (terminal, colour, --json, --jq). Each command is an
// options struct (its streams, the dependency functions it uses, its flags
// as parsed), a newXCmd(f) constructor that parses argv into it, and a
// runX(ctx, opts) function that runs without cobra; printers take the
// streams.
package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// MCPServer serves peerctl's tools over the Model Context Protocol on std
// until std.In closes or ctx ends. internal/mcpserve.Serve is the one; a
// peerctl built without it (cmd/peerctl, so that no other command pays for
// the MCP SDK's start-up) runs `peerctl mcp` as peerctl-mcp instead.
type MCPServer = func(ctx context.Context, tools mcptools.Tools[listOut, wire.Show, wire.Receipt], std mcptools.Stdio) error

// Main runs peerctl with the process's arguments and standard streams and
// exits with its exit code. serve is the MCP server, or nil; bus the
// fleet's bus client (internal/fleet.Bus), or nil: a peerctl built without
// it runs serve with a bus, list --fleet, --host nats:NODE and policy
// nats-config as peerctl-mcp; store the outbox's store
// (internal/outboxstore.Store), or nil: a peerctl built without it runs
// serve, watch and the outbox commands as peerctl-mcp (runWithStore); jq
// the filter of --jq (internal/jqfilter.Compile), or nil: a peerctl built
// without it runs a command line with --jq as peerctl-mcp (jqWithFilter).
func Main(serve MCPServer, bus wiring.Bus, store wiring.Store, jq JQ) {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, serve, bus, store, jq))
}

// run executes one command line and returns the process exit code. The
// command catches signals when it can start something it must end
// (catchSignals).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, serve MCPServer, bus wiring.Bus, store wiring.Store, jq JQ) int {
	cli := newFactory(stdin, stdout, stderr, getenv)
	cli.serveMCP = serve
	cli.bus = bus
	cli.store = store
	cli.compileJQ = jq
	return execute(context.Background(), cli, args)
}

// signalsKey is the cobra annotation of a command that reads this machine
// and starts nothing there (list, show): root does not catch its signals
// (catchSignals); the command catches them itself when it reaches another
// machine (ssh, the fleet's bus).
const signalsKey, signalsWhenRemote = "peerctl:signals", "when-remote"

// catchSignals makes SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal
// closed, the SSH connection dropped) cancel cmd's context, so that a
// running courier's or ssh's whole process group is ended and a send ends
// as canceled instead of peerctl dying and leaving the courier behind:
// delivery_failed (exit 5) when nothing was sent yet, outcome_unknown
// (exit 12) once the text was handed over. Root's PersistentPreRunE calls
// it for every command (send, watch, relay, enrich, doctor, whoami, mcp,
// serve, ...) but those marked signalsWhenRemote, which call it when they
// reach another machine; a read of this machine alone starts nothing, and
// a signal ends it at once, as it ends any program that does not catch
// it. Catching costs a run about three OS threads more (one of them locked
// to the signal handling) and their start. The first signal is the only one caught: a
// second one ends peerctl at once, as it would without peerctl's
// handling, so nothing stuck can outlast two Ctrl-Cs. executeTree stops
// catching when the command returns.
func (c *factory) catchSignals(cmd *cobra.Command) {
	if c.stopSignals != nil {
		return
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	c.stopSignals = stop
	go func() {
		<-ctx.Done() // the first signal, or the command returning
		stop()
	}()
	cmd.SetContext(ctx)
}
