package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// CommandTree returns peerctl's whole command tree, for generators that
// document it (internal/mangen writes the man pages from it). Running it
// behaves as the peerctl program does.
func CommandTree() *cobra.Command {
	return newRootCmd(newFactory(os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
