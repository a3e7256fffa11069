package cli

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
)

// The outbox's store (SQLite, wiring.Store) is linked into peerctl-mcp
// only, beside the MCP server and the bus client: it would cost every
// command of peerctl about a fifth of its start-up (docs/PERFORMANCE.md).
// peerctl runs serve and watch as peerctl-mcp, and the outbox commands
// and serve status when there is an outbox to read; with none they answer
// here, as before (an empty outbox).

// storeNeed is when a command of a program without the outbox's store
// runs as peerctl-mcp (runWithStore).
type storeNeed int

const (
	// storeAlways: the command keeps the outbox (serve).
	storeAlways storeNeed = iota
	// storeToRead: the command reads the outbox, and answers as an empty
	// one when there is no outbox file (the outbox commands, serve
	// status).
	storeToRead
	// storeToFollow: the command follows the outbox, waiting for it to
	// be made (watch): it runs as peerctl-mcp when there is an outbox
	// file or a peerctl-mcp to run; with neither, no outbox can be made
	// (serve runs as peerctl-mcp) and it runs here.
	storeToFollow
)

// watchWithStore runs `watch` of this machine as peerctl-mcp (storeToFollow)
// when this program has no store: before anything is printed, the hello
// line of a watch run over ssh among it (sayHello), which peerctl-mcp
// prints. cmd is the command about to run; ran is false for any other.
func (c *factory) watchWithStore(cmd *cobra.Command) (ran bool, err error) {
	if c.store != nil || cmd.Name() != "watch" || cmd.Parent() != cmd.Root() {
		return false, nil
	}
	hosts, _ := cmd.Flags().GetStringArray("host")
	dests, err := parseHosts(hosts, true)
	if err != nil || len(dests) > 0 && !slices.ContainsFunc(dests, domain.Dest.IsLocal) {
		return false, nil // a bad --host is watch's to say; other machines' outboxes are theirs
	}
	c.started()
	return c.runWithStore("peerctl watch", storeToFollow)
}

// serveProgram is the program that runs peerctl serve: this one when it
// has the outbox's store linked in, else peerctl-mcp (found as runWithStore
// finds it, so that a missing one is said at once, not after a start).
func (c *factory) serveProgram() (string, error) {
	if c.store != nil {
		return c.executable()
	}
	return findMCPProgram(c.executable, "peerctl serve")
}

// runWithStore runs this command line as peerctl-mcp, the program with
// the outbox's store linked in (on Unix in place of this process), when
// this program has none (c.store nil) and the command needs it (need).
// ran says whether it ran (err is then its result); what names the
// command for the errors, such as "peerctl serve".
func (c *factory) runWithStore(what string, need storeNeed) (ran bool, err error) {
	if c.store != nil {
		return false, nil
	}
	if need != storeAlways {
		p, err := serve.PathsFor(c.getenv)
		if err != nil {
			return false, nil // the command says so itself
		}
		_, err = os.Lstat(p.DB)
		absent := errors.Is(err, fs.ErrNotExist)
		if absent && need == storeToRead {
			return false, nil
		}
		if absent && need == storeToFollow {
			if _, err := findMCPProgram(c.executable, what); err != nil {
				return false, nil
			}
		}
	}
	return true, runMCPProgram(c.io, c.executable, c.args, c.environ(), what)
}
