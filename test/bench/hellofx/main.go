// Command hellofx is test/bench/hello with peerctl's command-line and wiring
// libraries linked in and unused (go.uber.org/fx, which brings go.uber.org/zap
// and through it net/http and crypto/tls; github.com/spf13/cobra): the start-up
// those packages cost by being in the binary (their package initialisation,
// a larger binary to map), apart from anything peerctl does with them.
// scripts/bench.sh times it beside hello and peerctl.
package main

import (
	"os"

	_ "github.com/spf13/cobra"
	_ "go.uber.org/fx"
)

func main() { _, _ = os.Stdout.WriteString("[]\n") }
