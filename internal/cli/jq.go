package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/ports/wire"
)

// JQ compiles the expression of --jq EXPR into a filter, or returns why it
// is no expression (internal/jqfilter.Compile, over gojq). The filter runs
// the expression on v as v's JSON document reads and hands each result to
// emit in turn (a string, a number, a bool, nil, an []any or a
// map[string]any), returning emit's first error as it is, ctx's error once
// ctx is done, else the first error of the expression on v (halt_error's
// is a haltError). Only peerctl-mcp links it: gojq's package
// initialisation would cost every command of peerctl about a tenth of its
// start-up (docs/PERFORMANCE.md); a peerctl without it runs a command line
// with --jq as peerctl-mcp (jqWithFilter).
type JQ = func(expr string) (func(ctx context.Context, v any, emit func(any) error) error, error)

// jqFlag is --jq, on every command that has --json (addJQFlags): gh's flag
// of the same name and shorthand, -q.
const jqFlag = "jq"

// outputFlag is --output (-o), hidden: "json" is --json.
const outputFlag = "output"

// addJQFlags gives every command of the tree under cmd that has --json a
// --jq EXPR (-q EXPR) flag, whose value lands in s.jqExpr: one place, so
// that a new --json command has it too.
func (s *iostreams) addJQFlags(cmd *cobra.Command) {
	if cmd.Flags().Lookup("json") != nil {
		cmd.Flags().StringVarP(&s.jqExpr, jqFlag, "q", "", "filter with jq's `EXPR` (implies --json)")
		// -o json, --output json: kubectl's and others' spelling of --json,
		// taken and not shown.
		cmd.Flags().StringVarP(&s.outputFormat, outputFlag, "o", "", "")
		_ = cmd.Flags().MarkHidden(outputFlag)
	}
	for _, sub := range cmd.Commands() {
		s.addJQFlags(sub)
	}
}

// jqWithFilter runs this command line as peerctl-mcp, the program with the
// jq filter linked in (on Unix in place of this process), when --jq is
// given to cmd, the command about to run, and this program has no filter
// (c.compileJQ nil): before the command runs or prints anything, so
// nothing is done twice. ran is false when it did not run it.
func (c *factory) jqWithFilter(cmd *cobra.Command) (ran bool, err error) {
	if f := cmd.Flags().Lookup(jqFlag); c.compileJQ != nil || f == nil || !f.Changed {
		return false, nil
	}
	c.started()
	return true, runMCPProgram(c.io, c.executable, c.args, c.environ(), "--jq")
}

// useJQ is run before every command: with --jq given it compiles the
// expression with compile (a bad one is a usage error that names it) and
// sets --json, which --jq implies (the filter runs on cmd's context, so
// that Ctrl-C, SIGTERM and SIGHUP end an expression that never ends); -o json (--output json) sets --json
// too, any other format is a usage error.
func (s *iostreams) useJQ(cmd *cobra.Command, compile JQ) error {
	if f := cmd.Flags().Lookup(outputFlag); f != nil && f.Changed {
		if s.outputFormat != "json" {
			return usageError{fmt.Errorf("--output %q: only json is an output format (tables are for people; --json, --jq EXPR for scripts)", s.outputFormat)}
		}
		if err := cmd.Flags().Set("json", "true"); err != nil {
			return err
		}
	}
	f := cmd.Flags().Lookup(jqFlag)
	if f == nil || !f.Changed {
		return nil
	}
	filter, err := compile(s.jqExpr)
	if err != nil {
		return usageError{fmt.Errorf("--jq %q: %v", s.jqExpr, err)}
	}
	ctx := cmd.Context()
	s.jqActs = acts(cmd)
	s.jq = func(v any, emit func(any) error) error { return filter(ctx, v, emit) }
	return cmd.Flags().Set("json", "true")
}

// writeJQ prints what the filter makes of v (the same value --json
// prints): one line per result, a string raw (a character that is not
// printable escaped, as in a message's text: see wire.SafeText), anything else
// as compact JSON. An error of the expression on v (after the results
// before it) is said on stderr at once, "peerctl: --jq: ERROR", and kept
// for the exit code (s.jqFailed, jqExit), so that the command goes on: a
// watch with its next event, a send with its exit code. halt_error's value
// is printed on stderr as jq prints it (a string raw, with no newline
// added; anything else as JSON and a newline), its code kept; for a
// command that only reads it is returned as a silentError with its code,
// ending the command as jq ends. Else only an error writing stdout is
// returned.
func (s *iostreams) writeJQ(v any) error {
	var werr error
	err := s.jq(v, func(out any) error {
		if str, ok := out.(string); ok {
			_, werr = fmt.Fprintln(s.out, wire.SafeText(str))
		} else {
			werr = wire.EncodeJSON(s.out, out, "", false)
		}
		return werr
	})
	if err == nil || werr != nil {
		return err
	}
	var halt haltError
	halted := errors.As(err, &halt)
	if s.jqFailed == nil || halted {
		s.jqFailed = err
	}
	if !halted {
		fmt.Fprintf(s.errOut, "peerctl: --jq: %s\n", safe(err.Error()))
		return nil
	}
	if str, ok := halt.Value().(string); ok {
		fmt.Fprint(s.errOut, wire.SafeText(str))
	} else {
		_ = wire.EncodeJSON(s.errOut, halt.Value(), "", false)
	}
	if s.jqActs {
		return nil
	}
	// As jq, halt_error ends a command that only reads (a watch too).
	return silentError{code: halt.ExitCode()}
}

// haltError is the error of jq's halt_error: Value to print on stderr,
// ExitCode to exit with (jqfilter.Halt, not imported here: see JQ).
type haltError interface {
	error
	ExitCode() int
	Value() any
	Halted()
}

// actingCommands are the commands with --json that change something (their
// document reports what they did), by path under the root: a filter that
// fails on their output leaves their exit code as it is (jqExit).
var actingCommands = map[string]bool{
	"send": true, "outbox cancel": true, "outbox retry": true, "outbox approve": true, "outbox deny": true,
	"hosts install": true, "policy nats-setup": true,
}

// jqExit is the exit code of cmd, which ended with code, once --jq's
// filter failed on its output (s.jqFailed; docs/OUTPUT.md): a filter's
// error never hides what the command did. A command that acted (a send,
// an outbox change...: s.jqActs) or was refused keeps its code, and stderr says that
// its result stands; a command that only reads exits 1 (as gh's --jq), or
// with halt_error's code.
func (s *iostreams) jqExit(cmd *cobra.Command, code int) int {
	if s.jqFailed == nil || cmd == nil {
		return code
	}
	var halt haltError
	halted := errors.As(s.jqFailed, &halt)
	if s.jqActs || (code != wire.ExitOK && !halted) {
		fmt.Fprintf(s.errOut, "peerctl: --jq: the filter failed on the output only; what %s did stands (exit %d)\n", cmd.CommandPath(), code)
		return code
	}
	if halted {
		return halt.ExitCode()
	}
	return wire.ExitError
}

// acts reports whether cmd is one of actingCommands.
func acts(cmd *cobra.Command) bool {
	return actingCommands[strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")]
}
