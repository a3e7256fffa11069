package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/internal/wiring"
)

// harnessFlagValues holds the harness plug-ins' flag values by name
// (ports.HarnessFlag): what the flags a command has were given. They
// reach the graph in app.Config.Flags.
type harnessFlagValues map[string]*string

// add adds to cmd the flags the harness plug-ins bring that name it (the
// program a harness runs).
func (v harnessFlagValues) add(cmd *cobra.Command) {
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			if slices.Contains(f.Commands, cmd.Name()) {
				cmd.Flags().StringVar(v.ptr(f.Name), f.Name, "", f.Usage)
			}
		}
	}
}

// addGlobal adds to root, as persistent flags, the harness flags of every
// command (a harness's home).
func (v harnessFlagValues) addGlobal(root *cobra.Command) {
	for _, p := range wiring.Plugins() {
		for _, f := range p.Flags {
			if len(f.Commands) == 0 {
				root.PersistentFlags().StringVar(v.ptr(f.Name), f.Name, "", f.Usage)
			}
		}
	}
}

// ptr is where the value of harness flag name is kept.
func (v harnessFlagValues) ptr(name string) *string {
	p, ok := v[name]
	if !ok {
		p = new(string)
		v[name] = p
	}
	return p
}

// values are the harness flags' values, for app.Config.Flags.
func (v harnessFlagValues) values() map[string]string {
	out := make(map[string]string, len(v))
	for name, p := range v {
		out[name] = *p
	}
	return out
}

// rejectEmptyPathFlags is root's PersistentPreRunE: it refuses, before any
// command runs, a harness flag given with an empty value. Each names a
// path or program whose absence means a default: given empty
// (--config-dir "", from an unset shell variable say) it would silently
// mean that default. Their environment variables ($CLAUDE_CONFIG_DIR,
// $QWEN_HOME, ...) keep the usual meaning of empty: unset, as Claude Code
// reads CLAUDE_CONFIG_DIR.
func rejectEmptyPathFlags(cmd *cobra.Command, _ []string) error {
	for _, p := range wiring.Plugins() {
		for _, pf := range p.Flags {
			f := cmd.Flags().Lookup(pf.Name)
			if f != nil && f.Changed && f.Value.String() == "" {
				return usageError{fmt.Errorf("--%s is empty: give a value, or leave the flag out to use %s", pf.Name, pf.Otherwise)}
			}
		}
	}
	return nil
}
