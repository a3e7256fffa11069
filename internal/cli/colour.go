package cli

import (
	"os"
	"strings"
)

// SGR colours (ECMA-48), each two digits so that every painted cell of a
// column is the same number of bytes longer (see paint).
const (
	colourNone   = "39" // the terminal's own colour
	colourRed    = "31"
	colourGreen  = "32"
	colourYellow = "33"
	colourCyan   = "36"
	colourGrey   = "90"
)

// isTerminalFile reports whether v is an *os.File on a terminal: a
// character device that answers a terminal's ioctl (isTTY), so that
// /dev/null, also a character device, is none. The default of
// cli.terminal.
func isTerminalFile(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && isTTY(f)
}

// paint is s in colour code when on, else s: ESC [ code m, s, ESC [ 0 m,
// which a table (shownWidth) does not count.
func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// stateColour is the colour of a word of a state that people scan a
// table or a line for: green what went well or is ready, yellow what is
// under way or needs a look, red a failure or refusal, grey what is over
// or does not count.
func stateColour(word string) string {
	switch {
	case strings.HasSuffix(word, "(not addressable)"), strings.HasPrefix(word, "waiting ("):
		return colourYellow
	}
	switch word {
	case "idle", "live", "ok", "delivered", "taken_up", "replied":
		return colourGreen
	case "busy", "stored", "delivering", "held":
		return colourCyan
	case "warn", "waiting", "unknown", "reused", "foreign", "misnamed", "headless", "unsupported":
		return colourYellow
	case "fail", "refused", "expired", "outcome_unknown", "malformed", "unreadable":
		return colourRed
	case "stale", "cancelled", "skip", "skipped":
		return colourGrey
	}
	return colourNone
}
