package cli

import (
	"io"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// iostreams are one invocation's standard streams and how its output is
// shaped (gh's IOStreams): whether a stream is a terminal and gets colour,
// and --json, --jq and -o as the command was given them. Commands print
// through it, never through the factory.
type iostreams struct {
	in          io.Reader
	out, errOut io.Writer
	// getenv reads $NO_COLOR, $CLICOLOR, $CLICOLOR_FORCE and $TERM
	// (colourOn).
	getenv func(string) string
	// terminal reports whether a stream (an *os.File) is a terminal
	// (colourOn); tests replace it.
	terminal func(any) bool
	// jsonOut is set by commands with --json so refusals print as JSON too.
	jsonOut bool
	// jqExpr is --jq's value; jq its filter (nil without --jq): what
	// writeJSON prints instead of the document (jq.go).
	jqExpr string
	jq     func(v any, emit func(any) error) error
	// jqFailed is the first error of the filter on an output (writeJQ),
	// which decides the exit code at the end (jqExit).
	jqFailed error
	// jqActs is set when the command changes something (actingCommands):
	// a filter's error leaves its exit code as it is.
	jqActs bool
	// outputFormat is the hidden --output (-o): "json" is --json.
	outputFormat string
}

// newIOStreams are the streams given, terminal detection on *os.File.
func newIOStreams(in io.Reader, out, errOut io.Writer, getenv func(string) string) *iostreams {
	return &iostreams{in: in, out: out, errOut: errOut, getenv: getenv, terminal: isTerminalFile}
}

// writeJSON prints v as one pretty-printed JSON document (docs/OUTPUT.md:
// two-space indent, <, > and & not escaped, characters that are not
// printable escaped; see wire.EncodeJSON), or with --jq what the expression
// makes of it (writeJQ).
func (s *iostreams) writeJSON(v any) error {
	if s.jq != nil {
		return s.writeJQ(v)
	}
	return wire.EncodeJSON(s.out, v, "  ", false)
}

// writeJSONLine prints v as one JSON line (watch --json), or with --jq
// what the expression makes of it.
func (s *iostreams) writeJSONLine(v any) error {
	if s.jq != nil {
		return s.writeJQ(v)
	}
	return wire.EncodeJSON(s.out, v, "", false)
}

// printRefusalJSON prints r as docs/OUTPUT.md's refusal document; with
// --jq nothing, as gh does not run --jq on an error: the filter is for
// the command's document, and stdout stays empty (the refusal is on
// stderr, its reason in the exit code).
func (s *iostreams) printRefusalJSON(r *domain.Refusal) {
	if s.jq != nil {
		return
	}
	_ = s.writeJSON(wire.RefusalDoc{Refusal: wire.RefusalBody{Reason: r.Reason.String(), Detail: r.Detail, ExitCode: wire.ExitCode(r.Reason), Candidates: r.Candidates,
		Suggestions: r.Suggestions, Status: r.Status, StatusReason: r.StatusReason}})
}

// colourOn says whether w gets colour: never with $NO_COLOR set to a
// non-empty value (https://no-color.org), $CLICOLOR=0 or $TERM=dumb;
// else when w is a terminal (terminal), or $CLICOLOR_FORCE is set and not
// "0" (https://bixense.com/clicolors, as gh reads them). A pipe, a file or
// a buffer gets none unless forced.
func (s *iostreams) colourOn(w io.Writer) bool {
	if s.getenv("NO_COLOR") != "" || s.getenv("CLICOLOR") == "0" || s.getenv("TERM") == "dumb" {
		return false
	}
	if f := s.getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return true
	}
	return s.terminal(w)
}

// tableWidth is the width a table's rows (list, outbox, watch) are fitted
// to: the terminal's when stdout is one (80 when it tells none), else 0:
// piped or redirected, a row is never cut to fit (its cells keep only the
// fixed caps, widthName and the like).
func (s *iostreams) tableWidth() int {
	if !s.terminal(s.out) {
		return 0
	}
	if n := terminalColumns(s.out); n > 0 {
		return n
	}
	return defaultColumns
}

// defaultColumns is a terminal's width when it tells none.
const defaultColumns = 80

// stdinTerminal reports whether stdin is a terminal.
func (s *iostreams) stdinTerminal() bool { return isTerminalFile(s.in) }
