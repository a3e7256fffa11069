//go:build unix

// Command install-codex installs the Codex CLI release the live tests use
// (livecodex.Version(), or the versions given) into the test cache and
// prints each one's native codex program.
//
//	go run ./test/livecodex/cmd/install-codex [VERSION...]
package main

import (
	"fmt"
	"os"

	"github.com/peerctl/peerctl/test/livecodex"
)

func main() {
	versions := os.Args[1:]
	if len(versions) == 0 {
		versions = []string{livecodex.Version()}
	}
	for _, v := range versions {
		bin, err := livecodex.Install(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "install-codex:", err)
			os.Exit(1)
		}
		fmt.Printf("%s\t%s\n", v, bin)
	}
}
