package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// helpWidth is the width flag descriptions are wrapped to in --help, so
// that a help screen fits a terminal of 120 columns, not only its height.
const helpWidth = 120

// usage prints a command's usage as cobra's default does (Usage,
// Aliases, Examples, Available Commands, Flags, Global Flags, Additional
// help topics), with each flag's description wrapped to helpWidth. A Go
// function rather than cobra's SetUsageTemplate: a template links
// text/template's reflection into the binary (see root).
func usage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	fmt.Fprint(w, "Usage:")
	if cmd.Runnable() {
		fmt.Fprintf(w, "\n  %s", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", cmd.CommandPath())
	}
	if len(cmd.Aliases) > 0 {
		fmt.Fprintf(w, "\n\nAliases:\n  %s", cmd.NameAndAliases())
	}
	if cmd.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", cmd.Example)
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nAvailable Commands:")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprint(w, "\n\nFlags:\n", strings.TrimRight(cmd.LocalFlags().FlagUsagesWrapped(helpWidth), " \n"))
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprint(w, "\n\nGlobal Flags:\n", strings.TrimRight(cmd.InheritedFlags().FlagUsagesWrapped(helpWidth), " \n"))
	}
	if cmd.HasHelpSubCommands() {
		fmt.Fprint(w, "\n\nAdditional help topics:")
		for _, sub := range cmd.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				fmt.Fprintf(w, "\n  %-*s %s", sub.CommandPathPadding(), sub.CommandPath(), sub.Short)
			}
		}
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", cmd.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}
