package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// pathFlags are the flags naming a path or program whose absence means a
// default: given empty (--config-dir "", from an unset shell variable say)
// they would silently mean that default, so an empty value is a usage
// error instead. Their environment variables ($CLAUDE_CONFIG_DIR,
// $QWEN_HOME, $PEERCTL_CLAUDE, $PEERCTL_QWEN) keep the usual meaning of
// empty: unset, as Claude Code reads CLAUDE_CONFIG_DIR.
var pathFlags = []struct{ name, otherwise string }{
	{"config-dir", "$CLAUDE_CONFIG_DIR, else ~/.claude"},
	{"qwen-home", "$QWEN_HOME, else ~/.qwen"},
	{"claude", "$PEERCTL_CLAUDE, else claude on PATH"},
	{"qwen", "$PEERCTL_QWEN, else qwen on PATH"},
}

// rejectEmptyPathFlags is root's PersistentPreRunE: it refuses, before any
// command runs, a path flag given with an empty value.
func rejectEmptyPathFlags(cmd *cobra.Command, _ []string) error {
	for _, pf := range pathFlags {
		f := cmd.Flags().Lookup(pf.name)
		if f != nil && f.Changed && f.Value.String() == "" {
			return usageError{fmt.Errorf("--%s is empty: give a value, or leave the flag out to use %s", pf.name, pf.otherwise)}
		}
	}
	return nil
}
