package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// validAwait checks --await-reply against the other flags: it needs the
// a transport a reply comes back on (app.HearsReplies: a socket post
// cannot be answered, the session sees no sender address), sends for real, and is not combined with --wait.
func validAwait(await time.Duration, transport string, dryRun bool, confirm confirmFlags) error {
	switch {
	case await < 0:
		return usageError{fmt.Errorf("--await-reply %s: want a positive duration such as 2m", await)}
	case await == 0:
		return nil
	case !wiring.Plugins().HearsReplies(transport):
		return usageError{fmt.Errorf("--await-reply needs a transport a reply comes back on (each harness's default does): a %s send carries no address of peerctl's to answer to", transport)}
	case dryRun:
		return usageError{fmt.Errorf("--await-reply and --dry-run contradict each other")}
	case confirm.wait > 0:
		return usageError{fmt.Errorf("--await-reply and --wait: pick one (the reply usually ends the session's turn)")}
	}
	return nil
}

// printReplyText prints a reply as text: its words on stdout, a warning on
// stderr when they were cut. One newline is always added, so a script
// takes the text exactly by dropping the last byte ($(...) drops trailing
// newlines itself).
func printReplyText(ios *iostreams, r wire.Inbound) error {
	if r.Truncated {
		fmt.Fprintf(ios.errOut, "peerctl: warning: the reply was cut at %d bytes (truncated)\n", domain.MaxInboundBytes)
	}
	_, err := fmt.Fprint(ios.out, safeText(r.Text)+"\n")
	return err
}

// safeText is text as sent, for a whole inbound message on a terminal:
// newlines and tabs stay, every other control or non-printable character
// (and invalid UTF-8) is escaped as Go escapes it, so an inbound message
// cannot move the cursor, recolour the screen or hide a line. Text with
// nothing to escape is returned as it is; once anything is escaped, every
// backslash is doubled too, so that the output reads back one way (a
// literal `\x1b` prints as `\\x1b`, a real ESC as `\x1b`).
func safeText(s string) string {
	if !needsEscaping(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n' || r == '\t' || strconv.IsPrint(r):
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}

// needsEscaping reports whether s holds anything safeText escapes: a
// character that is not printable other than newline and tab, or
// invalid UTF-8.
func needsEscaping(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

func clipText(s string, n int) string { return wire.Clip(s, n) }
