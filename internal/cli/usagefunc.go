package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the widest flag descriptions are wrapped to in --help, so
// that a help screen fits a terminal of 120 columns, not only its height.
const helpWidth = 120

// minHelpWidth is the narrowest: below it, a flag's description would
// have no room beside its name.
const minHelpWidth = 60

// helpColumns is the width --help wraps its text to: $COLUMNS when it is
// a number, else the width of the terminal on stdout, else on stderr
// (terminalColumns: a shell sets COLUMNS but does not export it, so a
// program run from bash on a terminal rarely sees it).
func (c *factory) helpColumns() int {
	return helpWidthOf(c.getenv("COLUMNS"), c.io.out, c.io.errOut)
}

// helpWidthOf is columns when it is a number, else the width of the first
// of outs that is a terminal, kept within minHelpWidth..helpWidth;
// helpWidth when none tells a width.
func helpWidthOf(columns string, outs ...any) int {
	n, err := strconv.Atoi(strings.TrimSpace(columns))
	if err != nil || n <= 0 {
		n = 0
		for _, o := range outs {
			if n = terminalColumns(o); n > 0 {
				break
			}
		}
	}
	if n <= 0 {
		return helpWidth
	}
	return max(minHelpWidth, min(n, helpWidth))
}

// shortDuration is d as a flag's value alone ([=10m] in --help): d's
// String without its zero minutes and seconds ("10m", "24h", "1h30m").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
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
		fmt.Fprintln(w, wrapHelp(text, width))
		fmt.Fprintln(w)
	}
	if cmd.Runnable() || cmd.HasSubCommands() {
		fmt.Fprint(w, cmd.UsageString())
	}
}

// wrapHelp wraps a help text to width. A paragraph of prose (lines none
// of which is indented or a list item, written at about 95 columns) that
// has a line wider than width is reflowed whole, so that a narrower
// terminal does not get each line broken in two; any other line wider
// than width is wrapped alone, as are the lines of helpLong's head (what
// the command does, then where the rest is, each a line of its own).
func wrapHelp(text string, width int) string {
	paras := strings.Split(text, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		wide, prose := false, !strings.Contains(p, "\nIn full: ")
		for _, l := range lines {
			wide = wide || utf8.RuneCountInString(l) > width
			prose = prose && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "- ")
		}
		switch {
		case !wide:
		case prose:
			paras[i] = wrapText(p, 0, width)
		default:
			for j, l := range lines {
				if utf8.RuneCountInString(l) > width {
					lines[j] = wrapText(l, 0, width)
				}
			}
			paras[i] = strings.Join(lines, "\n")
		}
	}
	return strings.Join(paras, "\n\n")
}

// usage prints a command's usage as cobra's default does (Usage,
// Aliases, Examples, Available Commands, Flags, Global Flags, Additional
// help topics), with each flag's description wrapped to width; the
// global flags are named, not described again (the root's --help does,
// as kubectl points to its options): on a terminal of 80 columns they
// took 8 to 12 lines of every command's screen. A Go
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
				head := fmt.Sprintf("  %-*s ", sub.NamePadding(), sub.Name())
				fmt.Fprint(w, "\n", head, wrapText(sub.Short, len(head), width))
			}
		}
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprint(w, "\n\nFlags:\n", strings.TrimRight(cmd.LocalFlags().FlagUsagesWrapped(width), " \n"))
	}
	if cmd.HasAvailableInheritedFlags() {
		var names []string
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		fmt.Fprint(w, "\n\nGlobal Flags:\n  ", wrapText(strings.Join(names, ", ")+" (see "+cmd.Root().Name()+" --help)", 2, width))
	}
	if cmd.HasHelpSubCommands() {
		// Named as they are asked for (peerctl help TOPIC), their
		// lines in one column, as gh's.
		fmt.Fprint(w, "\n\nAdditional help topics:")
		var topics []*cobra.Command
		pad := 0
		for _, sub := range cmd.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				topics = append(topics, sub)
				pad = max(pad, len(cmd.Root().Name()+" help "+sub.Name()))
			}
		}
		for _, sub := range topics {
			head := fmt.Sprintf("  %-*s  ", pad, cmd.Root().Name()+" help "+sub.Name())
			fmt.Fprint(w, "\n", head, wrapText(sub.Short, len(head), width))
		}
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nUse \"%s [command] --help\" for more information about a command.", cmd.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}
