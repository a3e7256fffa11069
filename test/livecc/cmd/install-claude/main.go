//go:build unix

// Command install-claude installs Claude Code releases into the live-test cache
// (see livecc.Install) and prints the path of each one's claude program.
//
//	go run ./test/livecc/cmd/install-claude [VERSION|newest...]
//
// Without arguments it installs livecc.Version() (PEERCTL_CLAUDE_VERSION or
// livecc.DefaultVersion). "newest" installs the newest release on the npm
// registry and records it for the version matrix (livecc.InstallNewest);
// when npm cannot be asked it says so and goes on (the matrix then uses its
// pinned newest). It exits 1 when an install fails.
package main

import (
	"fmt"
	"os"

	"github.com/peerctl/peerctl/test/livecc"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(versions []string) int {
	if len(versions) == 0 {
		versions = []string{livecc.Version()}
	}
	for _, v := range versions {
		if v == "newest" {
			nv, bin, err := livecc.InstallNewest()
			if err != nil {
				fmt.Fprintf(os.Stderr, "install-claude: newest: %v; the version matrix uses its pinned newest\n", err)
				continue
			}
			fmt.Printf("%s\t%s\n", nv, bin)
			continue
		}
		bin, err := livecc.Install(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "install-claude: %v\n", err)
			return 1
		}
		fmt.Printf("%s\t%s\n", v, bin)
	}
	return 0
}
