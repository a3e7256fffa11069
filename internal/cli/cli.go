package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
	"github.com/peerctl/peerctl/ports/wire"
)

// exitCodesHelp is the table `peerctl help exit-codes` prints, made from
// wire.ExitCodes: every code, its refusal word and its meaning in short
// (exitShort), each in a column, the meanings wrapped to width under
// their own start. It is made when the topic's help is printed
// (newHelpTopic), not at every start.
func exitCodesHelp(width int) string {
	var t table
	for _, r := range wire.ExitCodes {
		t.add(fmt.Sprintf("  %2d", r.Code), r.Word(), exitShort[r.Code])
	}
	t.wrapLast(width)
	var b strings.Builder
	b.WriteString("Exit codes:\n")
	_ = t.write(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// exitShort is each exit code's meaning in a line of `peerctl help
// exit-codes`, so that the table teaches in a screen; its meaning whole
// (wire.ExitCodes) is in docs/OUTPUT.md and man peerctl (EXIT STATUS). An
// array, not a map: no work at start.
var exitShort = [...]string{
	wire.ExitOK:                 "ok",
	wire.ExitError:              "unexpected error; list: a harness could not be read; doctor: a problem",
	wire.ExitUsage:              "usage error (bad flag, argument or address)",
	wire.ExitNotLive:            "no live session answers to the address",
	wire.ExitIdentityMismatch:   "ambiguous address (a name several sessions share: use the full id or endpoint), or the session changed between reads",
	wire.ExitDeliveryFailed:     "the transport could not start or did not deliver",
	wire.ExitHarnessUnsupported: "the session or program cannot do this",
	wire.ExitNotAddressable:     "live, but no messaging socket, name or id (or another user's socket)",
	wire.ExitInvalidMessage:     "empty, NUL, invalid UTF-8 or over the 64 KiB cap",
	wire.ExitNoReply:            "send --await-reply: handed over, but no reply came in time, or Ctrl-C ended the wait",
	wire.ExitHostUnreachable:    "--host: ssh could not connect, the host key is unknown or changed, or no peerctl is there",
	wire.ExitWaitTimeout:        "send --wait: handed over, but the turn on it had not ended in time (Ctrl-C: exit 0)",
	wire.ExitOutcomeUnknown:     "ended after the hand-over, before a receipt: it may have arrived; sending again may deliver it twice",
	wire.ExitOutboxUnavailable:  "the outbox cannot be used: nothing was stored (a send without --durable works)",
	wire.ExitKeyConflict:        "send --durable --key: the key names another message: nothing was stored or sent",
	wire.ExitNotFound:           "no such outbox message, host or policy rule",
	wire.ExitWrongState:         "outbox cancel/retry/approve/deny: the message's state does not allow it",
	wire.ExitNotAllowed:         "the trust policy refuses this sender this target: nothing was stored or sent",
}

// wrapText wraps text at spaces into lines of at most width columns, the
// first starting at column indent, the others indented by indent spaces.
// A word longer than a line is left whole.
func wrapText(text string, indent, width int) string {
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(text) {
		n := shownWidth(word)
		switch {
		case i == 0:
		case col+1+n > width:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

// commandsDocURL is docs/COMMANDS.md on the web: an installed peerctl
// comes without the repository's docs.
const commandsDocURL = "https://github.com/peerctl/peerctl/blob/main/docs/COMMANDS.md"

// ManualURL is docs/COMMANDS.md on the web, for the man pages.
const ManualURL = commandsDocURL

// helpLong is a command's Long help: what it does, in a line, and where
// the whole story is: its section of docs/COMMANDS.md (section is the
// anchor after "peerctl-") and the one exit-code table. A test keeps every
// --help within a screen (TestHelpFitsAScreen).
func helpLong(what, section string) string {
	return what + ".\nIn full: " + commandsDocURL + "#peerctl-" + section + "\nIts exit codes: peerctl help exit-codes"
}

// SplitLong splits a command's Long help as helpLong writes it into what
// the command does, every paragraph of it (the line after helpLong's and
// any paragraphs that follow), and the address of its section of
// docs/COMMANDS.md ("" for a Long helpLong did not write): the man pages
// put the one in DESCRIPTION and the other in SEE ALSO, and the exit-code
// line becomes EXIT STATUS.
func SplitLong(long string) (what, docURL string) {
	what, rest, ok := strings.Cut(long, "\nIn full: ")
	if !ok {
		return long, ""
	}
	docURL, rest, _ = strings.Cut(rest, "\n")
	if strings.HasPrefix(rest, "Its exit codes: ") {
		_, rest, _ = strings.Cut(rest, "\n")
	}
	if rest = strings.TrimLeft(rest, "\n"); rest != "" {
		what += "\n\n" + rest
	}
	return what, docURL
}

// exitCodesTopic is "peerctl help exit-codes": the one place the exit-code
// table is printed (a cobra help topic: no action, listed under
// "Additional help topics").
func exitCodesTopic(f *factory) *cobra.Command {
	return newHelpTopic(f, "exit-codes", "Every exit code, with each refusal's word",
		`Every peerctl command ends with one of these codes; a refusal prints its word first
("peerctl: not_live: ..."; "reason" in --json). Each code in full: man peerctl (EXIT
STATUS) and docs/OUTPUT.md#exit-codes; which command can end with which: docs/COMMANDS.md.

`, exitCodesHelp)
}

// newHelpTopic is a help topic (a command with no action, listed under
// "Additional help topics"): its help is intro, then the table that table
// makes for the width help wraps to (helpColumns). The table is made only when the topic's help is printed: made
// for every command it was about 450 allocations and 60 KB of every
// start, `list` included (docs/PERFORMANCE.md, sixth round). Its Long is
// intro until then; the man pages leave help topics out.
func newHelpTopic(f *factory, use, short, intro string, table func(width int) string) *cobra.Command {
	topic := &cobra.Command{Use: use, Short: short, Long: intro}
	topic.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		cmd.Long = intro + table(f.helpColumns())
		cmd.Parent().HelpFunc()(cmd, args)
	})
	return topic
}

// commands are peerctl's commands below the root, each with the word it
// is run by (its Name; TestCommandsByTheirWord holds that), in the order
// they were always added.
var commands = []struct {
	name  string
	build func(*factory) *cobra.Command
}{
	{"list", newListCmd}, {"show", newShowCmd}, {"send", newSendCmd}, {"relay", newRelayCmd},
	{"endpoint", newEndpointCmd}, {"doctor", newDoctorCmd}, {"whoami", newWhoamiCmd},
	{"version", newVersionCmd}, {"completion", newCompletionCmd}, {"watch", newWatchCmd},
	{"enrich", newEnrichCmd}, {"mcp", newMCPCmd}, {"hosts", newHostsCmd}, {"policy", newPolicyCmd},
	{"exit-codes", exitCodesTopic}, {"environment", environmentTopic},
	{"serve", newServeCmd}, {"outbox", newOutboxCmd},
}

// invoked is the command args run when it is certain from the first word
// alone, so that only that command's tree need be built (newRootCmdFor):
// args[0] names a command with an action. "" when a flag comes first, the
// word names nothing (a suggestion looks at every command), or it names
// help, completion (which describe the whole tree) or a help topic.
func invoked(args []string) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "completion", "exit-codes", "environment":
		return ""
	}
	for _, sc := range commands {
		if sc.name == args[0] {
			return sc.name
		}
	}
	return ""
}

// newRootCmd is peerctl: every command, built from c.
func newRootCmd(c *factory) *cobra.Command { return newRootCmdFor(c, "") }

// newRootCmdFor is newRootCmd with only the command named only below the
// root ("" for every one): a run builds the one command it runs (invoked),
// its flags and help, and not the others'. Building all of them, their
// flags' defaults formatted among it (pflag formats an empty string list
// through a CSV writer with a 4 KiB buffer), was about a tenth of the
// page faults of `list` (docs/PERFORMANCE.md, seventh round). The
// command, its help and its errors read the same either way
// (TestOneCommandReadsAsInTheWholeTree).
func newRootCmdFor(c *factory, only string) *cobra.Command {
	root := &cobra.Command{
		Use:   "peerctl",
		Short: "Find live coding-agent sessions (" + wiring.Plugins().Titles("and") + ") and deliver a message into one, safely",
		Long: `peerctl finds the live coding-agent sessions (never a stale record), here or over ssh
(--host), and delivers a message into one its harness's way. A failure is a refusal with a
stable word and exit code (peerctl help exit-codes); nothing is guessed, no registry written. In
full: README.md, docs/COMMANDS.md.`,
		Example: `  peerctl list
  peerctl send build-3f "the API changed, rebase"
  answer=$(peerctl send --await-reply=2m build-3f "which branch are you on?")
  peerctl doctor`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(c.io.in)
	root.SetOut(c.io.out)
	root.SetErr(c.io.errOut)
	c.flags.addGlobal(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Annotations[signalsKey] != signalsWhenRemote {
			c.catchSignals(cmd)
		}
		if err := rejectEmptyPathFlags(cmd, args); err != nil {
			return err
		}
		var err error
		if c.debug, err = parseDebug(c.debugFlag, cmd.Flags().Changed("debug"), c.getenv); err != nil {
			return err
		}
		if ran, err := c.jqWithFilter(cmd); ran {
			return err
		}
		if err := c.io.useJQ(cmd, c.compileJQ); err != nil {
			return err
		}
		if ran, err := c.watchWithStore(cmd); ran {
			return err
		}
		return c.sayHello(cmd)
	}
	root.PersistentFlags().StringVar(&c.debugFlag, "debug", "", `log what a send does to stderr; --debug=fx: the wiring; also $`+debugEnv)
	root.PersistentFlags().Lookup("debug").NoOptDefVal = debugSend
	root.PersistentFlags().IntVar(&c.hello, helloFlag, 0, "")
	_ = root.PersistentFlags().MarkHidden(helloFlag)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if word := misspeltSubcommand(cmd, c.args); word != "" {
			return unknownSubcommand(cmd, []string{word})
		}
		return usageError{suggestFlag(cmd, err)}
	})
	// The width is the terminal's that peerctl prints to, not cmd's writer:
	// cobra's UsageString runs the usage function into a buffer.
	root.SetUsageFunc(func(cmd *cobra.Command) error { return usage(cmd, c.helpColumns()) })
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { help(cmd, c.helpColumns()) })
	for _, sc := range commands {
		if only == "" || sc.name == only {
			root.AddCommand(sc.build(c))
		}
	}
	// completion is peerctl's own command: cobra's, which it would build
	// for every run that lacks one (a run of one command), never serves.
	root.CompletionOptions.DisableDefaultCmd = true
	// --version is peerctl's own flag rather than cobra's (root.Version with
	// SetVersionTemplate): a cobra template links text/template's
	// reflection, which keeps every exported method in the binary (11.5 MB
	// instead of 9 MB, about 15% of the start-up of every command;
	// docs/PERFORMANCE.md), and the build info is read only when asked.
	var showVersion bool
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "print peerctl's version")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if showVersion {
			fmt.Fprintf(c.io.out, "peerctl %s\n", c.version().short())
			return nil
		}
		if err := flagsWithoutCommand(cmd); err != nil {
			return err
		}
		return cmd.Help()
	}
	root.InitDefaultHelpCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "help" {
			sub.Example = "  peerctl help send\n  peerctl help exit-codes\n  peerctl help environment"
			sub.RunE = helpTopic
		}
	}
	c.io.addJQFlags(root)
	rejectUnknownSubcommands(root)
	refuseApartValues(root, &c.args)
	return root
}

// rejectUnknownSubcommands makes root and every command with subcommands
// below it refuse an unknown subcommand as a usage error in one line, with
// a suggestion (unknownSubcommand): a group with no action of its own
// (endpoint) prints its help when given no argument; one with an action of
// its own (outbox, which lists) takes no argument but its subcommands.
// Left to cobra, a group would print its help and exit 0, and root's error
// would span lines, which the printing of a usage error escapes.
func rejectUnknownSubcommands(root *cobra.Command) {
	root.Args = unknownSubcommand
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
			if !sub.HasSubCommands() {
				continue
			}
			sub.Args = unknownSubcommand
			if !sub.Runnable() {
				sub.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		}
	}
	walk(root)
}

// unknownSubcommand refuses any argument of a command that takes only
// subcommands: `unknown command "lsit" for "peerctl"; did you mean list?`.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if args[0] == "help" && cmd.HasParent() {
		return usageError{fmt.Errorf("unknown command %q for %q; did you mean peerctl help %s?", args[0], cmd.CommandPath(), commandName(cmd))}
	}
	if sub, _, err := cmd.Find(args[:1]); err == nil && sub != cmd { // it came after "--"
		return usageError{fmt.Errorf("unknown command %q for %q: a word after \"--\" is no command (%s runs it)", args[0], cmd.CommandPath(), sub.CommandPath())}
	}
	return usageError{fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), didYouMean(cmd, args[0]))}
}

// flagsWithoutCommand refuses flags given to the root with no command
// after them (`peerctl --config-dir list`: the flag took the command as
// its value), which would otherwise print the root's help and exit 0. A
// flag with a value of its own when given bare (--debug: "send") never
// takes the next word, whatever its value names.
func flagsWithoutCommand(root *cobra.Command) error {
	var err error
	root.Flags().Visit(func(f *pflag.Flag) {
		if err != nil || f.NoOptDefVal != "" {
			return
		}
		if sub, _, ferr := root.Find([]string{f.Value.String()}); ferr == nil && sub != root {
			err = usageError{fmt.Errorf("--%s took %q as its value, and no command followed (peerctl --%s %s %s)",
				f.Name, f.Value.String(), f.Name, valueName(f), sub.Name())}
		}
	})
	if err == nil && root.Flags().NFlag() > 0 {
		err = usageError{errors.New("no command given (peerctl --help lists them)")}
	}
	return err
}

// valueName names a flag's value by the last word of its name
// (--config-dir: DIR, --codex-home: HOME).
func valueName(f *pflag.Flag) string {
	return strings.ToUpper(f.Name[strings.LastIndex(f.Name, "-")+1:])
}

// misspeltSubcommand is the word of args that names no subcommand of cmd
// where one is due, when a flag after it is unknown to cmd (`peerctl lsit
// --json`: root has no --json): the unknown command is the mistake to
// report, not the flag; "" when cmd takes no subcommands or no such word
// comes before the unknown flag. A flag's value (--config-dir DIR) is no
// command word.
func misspeltSubcommand(cmd *cobra.Command, args []string) string {
	if !cmd.HasSubCommands() {
		return ""
	}
	found, rest, err := cmd.Root().Find(args)
	if err != nil || found != cmd {
		return ""
	}
	lookup := func(a string) (*pflag.Flag, bool) {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var f *pflag.Flag
		if strings.HasPrefix(a, "--") {
			f = cmd.Flags().Lookup(name)
		} else if name != "" {
			f = cmd.Flags().ShorthandLookup(name[:1])
			hasValue = hasValue || len(name) > 1
		}
		return f, f != nil && !hasValue && f.NoOptDefVal == "" && f.Value.Type() != "bool"
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "-") && a != "-":
			f, takesNext := lookup(a)
			if f == nil {
				return ""
			}
			if takesNext {
				i++
			}
		default:
			return a
		}
	}
	return ""
}

// didYouMean is "; did you mean list?" naming cmd's subcommands close to
// typed (cobra's suggestions: within two edits, or starting with it), ""
// when none is.
func didYouMean(cmd *cobra.Command, typed string) string {
	return meant(suggestionsFor(cmd, typed, false))
}

// meant is "; did you mean a or b?", "" for no names.
func meant(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(names, " or ") + "?"
}

// suggestionsFor names cmd's subcommands close to typed (cobra's
// suggestions: within two edits, or starting with it) and, with topics,
// its help topics (environment, exit-codes) by the same measure, first.
func suggestionsFor(cmd *cobra.Command, typed string, topics bool) []string {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which only its message sets
	}
	var sugg []string
	if topics {
		lower := strings.ToLower(typed)
		for _, c := range cmd.Commands() {
			name := c.Name()
			if c.IsAdditionalHelpTopicCommand() && (strings.HasPrefix(name, lower) || domain.EditDistance(lower, name) <= cmd.SuggestionsMinimumDistance) {
				sugg = append(sugg, name)
			}
		}
	}
	sugg = append(sugg, cmd.SuggestionsFor(typed)...)
	// A name typed in part ("env") means the names it starts, not those
	// two edits away (send).
	lower := strings.ToLower(typed)
	if starts := slices.DeleteFunc(slices.Clone(sugg), func(n string) bool { return !strings.HasPrefix(n, lower) }); len(starts) > 0 {
		return starts
	}
	return sugg
}

// helpTopic is `peerctl help [command|topic]`: the help of what the words
// name; words that name no command or topic are a usage error with a
// suggestion (cobra's own help command prints the root's help and exits
// 0 for them).
func helpTopic(cmd *cobra.Command, args []string) error {
	target, rest, err := cmd.Root().Find(args)
	if err != nil || target == nil {
		target, rest = cmd.Root(), args
	}
	if len(rest) > 0 {
		// A subcommand is named with its parent's words, as help takes it
		// (did you mean outbox list?).
		sugg := suggestionsFor(target, rest[0], true)
		if target.HasParent() {
			for i, n := range sugg {
				sugg[i] = commandName(target) + " " + n
			}
		}
		hint := meant(sugg)
		if hint == "" {
			if !target.HasSubCommands() {
				target = target.Root()
			}
			hint = "; " + target.CommandPath() + " --help lists the commands and topics"
		}
		return usageError{fmt.Errorf("unknown help topic %q%s", strings.Join(args, " "), hint)}
	}
	target.InitDefaultHelpFlag()
	target.InitDefaultVersionFlag()
	return target.Help()
}

// suggestFlag adds to pflag's "unknown flag: --al" the flags of cmd
// (its own and inherited) meant most likely, as unknownSubcommand does for
// a command: "unknown flag: --al; did you mean --all?". A flag is meant
// when it starts with what was typed or is at most two edits from it,
// fewer than its length (so --jq is not what every two-letter typo meant).
func suggestFlag(cmd *cobra.Command, err error) error {
	typed, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok || typed == "" {
		return err
	}
	var sugg []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		if d := domain.EditDistance(typed, f.Name); strings.HasPrefix(f.Name, typed) || d <= 2 && d < len(f.Name) {
			sugg = append(sugg, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(sugg) == 0 {
		return err
	}
	return fmt.Errorf("%w; did you mean %s?", err, strings.Join(sugg, " or "))
}

// commandName is cmd's path without the program name ("endpoint parse"),
// for messages that peerctl's own "peerctl: " prefix already introduces.
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// withoutHelpOnUnknown drops -h/--help from args whose command word names
// no command: cobra prints the parent's help and exits 0 for `peerctl serve
// --help`, as if the word were not there; without the flag the word is the
// unknown command it is (exit 2, with a suggestion).
func withoutHelpOnUnknown(root *cobra.Command, args []string) []string {
	found, rest, err := root.Find(args)
	unknown := err != nil
	if found != nil && found.HasSubCommands() { // such a command takes only subcommands (unknownSubcommand)
		for _, a := range rest {
			unknown = unknown || !strings.HasPrefix(a, "-")
		}
	}
	if !unknown {
		return args
	}
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a != "-h" && a != "--help" {
			out = append(out, a)
		}
	}
	return out
}

// refuseTopicArguments makes a help topic given words (`peerctl
// exit-codes extra`) the usage error `peerctl help exit-codes extra` is:
// cobra prints a topic's help for any words and exits 0.
func refuseTopicArguments(root *cobra.Command, args []string) {
	topic, rest, err := root.Find(args)
	if err != nil || !topic.IsAdditionalHelpTopicCommand() || !slices.ContainsFunc(rest, func(a string) bool { return !strings.HasPrefix(a, "-") }) {
		return
	}
	topic.Args = noArgs
	topic.RunE = func(*cobra.Command, []string) error { return nil }
}

// usageError marks errors that deserve exit code 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// execute runs the command line args with c and returns its exit code:
// a refusal its reason's, a usage error 2, any other failure 1.
func execute(ctx context.Context, c *factory, args []string) int {
	return executeTree(ctx, c, args, invoked(args))
}

// executeTree is execute on the tree newRootCmdFor(c, only) builds.
func executeTree(ctx context.Context, c *factory, args []string, only string) int {
	c.args = args
	root := newRootCmdFor(c, only)
	refuseTopicArguments(root, args)
	root.SetArgs(withoutHelpOnUnknown(root, args))
	failed, err := root.ExecuteContextC(ctx)
	if c.stopSignals != nil {
		c.stopSignals()
		c.stopSignals = nil
	}
	return c.io.jqExit(failed, c.exitCode(root, failed, err))
}

// exitCode is the exit code of the command line that root ran, failed
// the command that ran and err its error, said on stderr.
func (c *factory) exitCode(root, failed *cobra.Command, err error) int {
	if err == nil {
		return wire.ExitOK
	}
	if r, ok := domain.AsRefusal(err); ok {
		text := refusalText(r, !c.debug.send)
		if word := r.Reason.String(); c.io.colourOn(c.io.errOut) && strings.HasPrefix(text, word) {
			text = paint(true, colourRed, word) + text[len(word):]
		}
		fmt.Fprintf(c.io.errOut, "peerctl: %s\n", text)
		if c.io.jsonOut {
			c.io.printRefusalJSON(r)
		}
		return wire.ExitCode(r.Reason)
	}
	var se silentError
	if errors.As(err, &se) {
		return se.code
	}
	var fe *wire.FarError
	if errors.As(err, &fe) {
		// A far side's own failure: its message (escaped), its exit code.
		fmt.Fprintf(c.io.errOut, "peerctl: %s\n", fe.Message)
		return fe.Code
	}
	var ue usageError
	if errors.As(err, &ue) || !c.ran || errors.Is(err, domain.ErrBadAddress) || errors.Is(err, domain.ErrBadEndpoint) {
		fmt.Fprintf(c.io.errOut, "peerctl: %s\n", safe(err.Error()))
		if failed == nil {
			failed = root
		}
		fmt.Fprintf(c.io.errOut, "Run '%s --help' for usage.\n", failed.CommandPath())
		return wire.ExitUsage
	}
	fmt.Fprintf(c.io.errOut, "peerctl: %s\n", safe(err.Error()))
	return wire.ExitError
}

// refusalText is a refusal for people and agents: "<reason>: <detail>"
// (with brief, its short detail when it has one: domain.Refusal.Brief),
// then one indented line per candidate: its session id as list shows it
// (domain.ShortIDs among the candidates), name, harness and pid, and for
// a record that is not live a second line with its verdict and file (a
// leftover to remove). Registry data in it goes through safe. The CLI
// prints it on stderr after "peerctl: ", brief unless --debug; the MCP
// tools return it whole as the text of an isError result.
func refusalText(r *domain.Refusal, brief bool) string {
	var b strings.Builder
	if brief {
		b.WriteString(safe(r.Brief()))
	} else {
		b.WriteString(safe(r.Error()))
	}
	entries := make([]domain.Entry, len(r.Candidates))
	for i, cand := range r.Candidates {
		entries[i].Record = domain.Record{SessionID: cand.SessionID, Name: cand.Name}
	}
	ids := domain.ShortIDs(entries)
	for i, cand := range r.Candidates {
		fmt.Fprintf(&b, "\n  candidate: %s  %q  %s  pid %d", safe(ids[i]), cand.Name, safe(cand.Harness), cand.PID)
		if cand.Verdict != "" {
			fmt.Fprintf(&b, "\n    (%s) file %s", safe(cand.Verdict), safe(cand.File))
		}
	}
	return b.String()
}
