package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/ports/wire"
)

// JQ compiles the expression of --jq EXPR into a filter, or returns why it
// is no expression (internal/jqfilter.Compile, over gojq). The filter runs
// the expression on v as v's JSON document reads and hands each result to
// emit in turn (a string, a number, a bool, nil, an []any or a
// map[string]any), returning emit's first error as it is, else the first
// error of the expression on v. Only peerctl-mcp links it: gojq's package
// initialisation would cost every command of peerctl about a tenth of its
// start-up (docs/PERFORMANCE.md); a peerctl without it runs a command line
// with --jq as peerctl-mcp (jqWithFilter).
type JQ = func(expr string) (func(v any, emit func(any) error) error, error)

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
// sets --json, which --jq implies; -o json (--output json) sets --json
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
	var err error
	if s.jq, err = compile(s.jqExpr); err != nil {
		return usageError{fmt.Errorf("--jq %q: %v", s.jqExpr, err)}
	}
	return cmd.Flags().Set("json", "true")
}

// writeJQ prints what the filter makes of v (the same value --json
// prints): one line per result, a string raw (a character that is not
// printable escaped, as in a message's text: see safeText), anything else
// as compact JSON. An error of the expression on v is returned after the
// results before it.
func writeJQ(w io.Writer, filter func(any, func(any) error) error, v any) error {
	var werr error
	err := filter(v, func(out any) error {
		if s, ok := out.(string); ok {
			_, werr = fmt.Fprintln(w, safeText(s))
		} else {
			werr = wire.EncodeJSON(w, out, "", false)
		}
		return werr
	})
	if err != nil && werr == nil {
		return fmt.Errorf("--jq: %v", err)
	}
	return err
}
