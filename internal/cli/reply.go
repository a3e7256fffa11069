package cli

import (
	"fmt"
	"time"

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
	_, err := fmt.Fprint(ios.out, wire.SafeText(r.Text)+"\n")
	return err
}

func clipText(s string, n int) string { return wire.Clip(s, n) }
