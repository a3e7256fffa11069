//go:build unix

// Command install-qwen installs the Qwen Code releases the live tests use
// (liveqwen.Version() and liveqwen.MessagingOffVersion) into the test cache
// and prints each program's path.
package main

import (
	"fmt"
	"os"

	"github.com/peerctl/peerctl/test/liveqwen"
)

func main() {
	for _, v := range []string{liveqwen.Version(), liveqwen.MessagingOffVersion} {
		bin, err := liveqwen.Install(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "install-qwen:", err)
			os.Exit(1)
		}
		fmt.Println(bin)
	}
}
