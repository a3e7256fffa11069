package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A flag whose value is optional (--wait, --await-reply, --durable, serve's
// --http: pflag's NoOptDefVal) takes it only joined by '='. Written apart
// ("--wait 5m", "--http 8080") the parser gives the flag its default and
// reads the word as an argument: refused, naming the joined form, when the
// word is what the flag's value would be.

// refuseApartValues makes every command of root that has such a flag
// refuse its value written apart (apartValue) before checking its
// arguments; args is the command line as given. Call it once the tree is
// whole (after rejectUnknownSubcommands).
func refuseApartValues(root *cobra.Command, args *[]string) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		optional := false
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { optional = optional || f.NoOptDefVal != "" })
		if !optional {
			return
		}
		check := cmd.Args
		if check == nil {
			check = cobra.ArbitraryArgs // cobra's for a command without subcommands
		}
		cmd.Args = func(cmd *cobra.Command, a []string) error {
			if err := apartValue(cmd, *args); err != nil {
				return err
			}
			return check(cmd, a)
		}
	}
	walk(root)
}

// apartValue is the usage error for the first optional-value flag of cmd
// in args followed, apart, by a word its value would be: a duration for a
// duration, HOST:PORT (or a bare port) for an ADDR; nil when there is
// none. Words after "--" are arguments, not flags.
func apartValue(cmd *cobra.Command, args []string) error {
	for i := 0; i+1 < len(args) && args[i] != "--"; i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || strings.Contains(name, "=") {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if f == nil || f.NoOptDefVal == "" {
			continue
		}
		word := args[i+1]
		noun, _ := pflag.UnquoteUsage(f)
		joined, note := word, ""
		switch noun {
		case "duration":
			if _, err := time.ParseDuration(word); err != nil {
				continue
			}
		case "ADDR":
			if p, err := strconv.Atoi(word); err == nil && p >= 0 && p < 1<<16 {
				joined = ":" + word
			} else if _, _, err := net.SplitHostPort(word); err != nil {
				continue
			}
			note = "; ADDR is HOST:PORT"
		default:
			continue
		}
		return usageError{fmt.Errorf("--%s %s: --%s takes its %s joined by '=' (--%s=%s%s); written apart, %q would be read as %s",
			name, word, name, noun, name, joined, note, word, argumentsOf(cmd))}
	}
	return nil
}

// argumentsOf names what cmd reads a word as: a command, or the
// arguments its usage line names ("SESSION or TEXT" for "send SESSION
// [TEXT|-]").
func argumentsOf(cmd *cobra.Command) string {
	if cmd.HasSubCommands() {
		return "a command"
	}
	var names []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		for _, n := range strings.Split(strings.Trim(w, "[]."), "|") {
			if n != "-" && n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return "an argument"
	}
	return strings.Join(names, " or ")
}
