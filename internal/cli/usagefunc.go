package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// helpWidth is the widest flag descriptions are wrapped to in --help, so
// that a help screen fits a terminal of 120 columns, not only its height.
const helpWidth = 120

// minHelpWidth is the narrowest: below it, a flag's description would
// have no room beside its name.
const minHelpWidth = 60

// helpColumns is the width --help wraps flag descriptions to: $COLUMNS
// (the terminal's width, as the shell sets it) when it is a number, kept
// within minHelpWidth..helpWidth; helpWidth when unset or not a number.
func helpColumns(columns string) int {
	n, err := strconv.Atoi(strings.TrimSpace(columns))
	if err != nil || n <= 0 {
		return helpWidth
	}
	return max(minHelpWidth, min(n, helpWidth))
}

// help prints a command's help as cobra's default does (its Long, else
// its Short, then its usage), each line of the text wrapped to width.
func help(cmd *cobra.Command, width int) {
	w := cmd.OutOrStdout()
	text := cmd.Long
	if text == "" {
		text = cmd.Short
	}
	if text = strings.TrimRightFunc(text, unicode.IsSpace); text != "" {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if utf8.RuneCountInString(l) > width {
				lines[i] = wrapText(l, 0, width)
			}
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		fmt.Fprintln(w)
	}
	if cmd.Runnable() || cmd.HasSubCommands() {
		fmt.Fprint(w, cmd.UsageString())
	}
}

// usage prints a command's usage as cobra's default does (Usage,
// Aliases, Examples, Available Commands, Flags, Global Flags, Additional
// help topics), with each flag's description wrapped to width. A Go
// function rather than cobra's SetUsageTemplate: a template links
// text/template's reflection into the binary (see root).
func usage(cmd *cobra.Command, width int) error {
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
		fmt.Fprint(w, "\n\nFlags:\n", strings.TrimRight(cmd.LocalFlags().FlagUsagesWrapped(width), " \n"))
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprint(w, "\n\nGlobal Flags:\n", strings.TrimRight(cmd.InheritedFlags().FlagUsagesWrapped(width), " \n"))
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
