//go:build unix

// Command install-opencode installs the opencode release the live tests use
// (liveopencode.Version(), or the versions given) into the test cache and
// prints each one's native opencode program.
//
//	go run ./test/liveopencode/cmd/install-opencode [VERSION...]
package main

import (
	"fmt"
	"os"

	"github.com/peerctl/peerctl/test/liveopencode"
)

func main() {
	versions := os.Args[1:]
	if len(versions) == 0 {
		versions = []string{liveopencode.Version()}
	}
	for _, v := range versions {
		bin, err := liveopencode.Install(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "install-opencode:", err)
			os.Exit(1)
		}
		fmt.Printf("%s\t%s\n", v, bin)
	}
}
