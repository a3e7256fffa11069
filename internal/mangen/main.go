// Command mangen writes peerctl's man pages (section 1, one per command:
// peerctl.1, peerctl-send.1, ...) from its cobra command tree into the
// folder given as its one argument. `make man` runs it into build/man, and
// the release archives carry them under man/man1. The pages' date is
// $SOURCE_DATE_EPOCH (Unix seconds; the Makefile sets the commit's time),
// else today.
//
// Each page is cobra's (doc.GenMan: NAME, SYNOPSIS, DESCRIPTION, OPTIONS,
// EXAMPLE, SEE ALSO; the examples fitted to 80 columns: fitExamples),
// titled by its own command (PEERCTL-SEND), with the sections cobra has
// no source for added before SEE ALSO. peerctl(1) has them whole: EXIT
// STATUS (wire.ExitCodes), ENVIRONMENT (cli.Environment) and FILES
// (cli.Files); a command's page has a short EXIT STATUS (0, 1, 2 and the
// range of the refusals' codes) and its SEE ALSO points at peerctl(1) and
// the help topics for the rest, as git's and gh's pages do. SEE ALSO also
// names the command's section of docs/COMMANDS.md on the web.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/peerctl/peerctl/internal/cli"
	"github.com/peerctl/peerctl/ports/wire"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mangen DIR")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
}

// write writes one page per command of cli.CommandTree into dir, creating
// it: every available command, not the help topics (exit-codes,
// environment: their tables are sections of every page).
func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	root := cli.CommandTree()
	disableAutoGenTag(root)
	showNoValueDefaults(root)
	whole, short := exitStatus()+environment()+files(), shortExitStatus()
	var walk func(cmd *cobra.Command) error
	walk = func(cmd *cobra.Command) error {
		for _, sub := range cmd.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(sub); err != nil {
				return err
			}
		}
		sections, seeAlso := whole, ""
		if cmd.HasParent() {
			sections, seeAlso = short, ".PP\n\\fBpeerctl(1)\\fP: every exit code, environment variable and file of peerctl (also \\fBpeerctl help exit\\-codes\\fP, \\fBpeerctl help environment\\fP)\n"
		}
		page, err := manPage(cmd, sections, seeAlso)
		if err != nil {
			return err
		}
		name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + ".1"
		if err := os.WriteFile(filepath.Join(dir, name), page, 0o644); err != nil {
			return fmt.Errorf("write man page %s: %w", name, err)
		}
		return nil
	}
	return walk(root)
}

// manPage is cmd's page: cobra's, with its DESCRIPTION what the command
// does (its Long help without the lines that point at the docs and the
// exit codes, which become SEE ALSO and EXIT STATUS), sections before
// SEE ALSO and seeAlso (roff) after cobra's list of related pages (less
// a page seeAlso names itself).
func manPage(cmd *cobra.Command, sections, seeAlso string) ([]byte, error) {
	what, docURL := cli.SplitLong(cmd.Long)
	cmd.Long = what
	var buf bytes.Buffer
	// No Title: cobra titles each page by its command (PEERCTL\-SEND).
	header := &doc.GenManHeader{Section: "1", Source: "peerctl", Manual: "peerctl manual"}
	if err := doc.GenMan(cmd, header, &buf); err != nil {
		return nil, fmt.Errorf("man page of %s: %w", cmd.CommandPath(), err)
	}
	page := fitExamples(optionLines(cmd, buf.String()))
	if !cmd.HasParent() {
		// cobra's SYNOPSIS of the root says "peerctl [flags]"; it is
		// used as "peerctl [command]".
		page = strings.Replace(page, `\fB`+cmd.CommandPath()+` [flags]\fP`, `\fB`+cmd.CommandPath()+` [command]\fP`, 1)
	}
	before, after, ok := strings.Cut(page, ".SH SEE ALSO\n")
	if !ok {
		return nil, fmt.Errorf("man page of %s: cobra wrote no SEE ALSO", cmd.CommandPath())
	}
	related := strings.Split(strings.TrimRight(after, "\n"), ", ")
	related = slices.DeleteFunc(related, func(ref string) bool { // seeAlso names it, with what it holds
		return ref == "" || strings.Contains(seeAlso, ref)
	})
	if len(related) == 0 {
		seeAlso = strings.TrimPrefix(seeAlso, ".PP\n")
	} else {
		seeAlso = strings.Join(related, ", ") + "\n" + seeAlso
	}
	page = before + sections + ".SH SEE ALSO\n" + strings.TrimRight(seeAlso, "\n")
	page = strings.TrimRight(page, "\n")
	if docURL != "" {
		page += "\n.PP\n\\%" + roff(docURL) + " (the command in full)"
	}
	page += "\n.PP\n\\%" + roff(cli.ManualURL) + " (every command)\n"
	return []byte(page), nil
}

// exitStatus is the EXIT STATUS section: the exit-code table, a code and
// its refusal word a tagged paragraph.
func exitStatus() string {
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, r := range wire.ExitCodes {
		tag := `\fB` + strconv.Itoa(r.Code) + `\fP`
		if w := r.Word(); w != "" {
			tag += ` \fI` + roff(w) + `\fP`
		}
		b.WriteString(".TP\n" + tag + "\n" + roff(r.Meaning) + "\n")
	}
	b.WriteByte('\n')
	return b.String()
}

// shortExitStatus is a command's EXIT STATUS section: success, error,
// usage error, and the range of the refusals' codes, each whole in
// peerctl(1) (which of them a command can give is in its section of
// docs/COMMANDS.md).
func shortExitStatus() string {
	lo, hi := -1, 0
	for _, r := range wire.ExitCodes {
		if r.Word() != "" {
			if lo < 0 {
				lo = r.Code
			}
			hi = max(hi, r.Code)
		}
	}
	return ".SH EXIT STATUS\n" +
		".TP\n\\fB" + strconv.Itoa(wire.ExitOK) + "\\fP\nsuccess\n" +
		".TP\n\\fB" + strconv.Itoa(wire.ExitError) + "\\fP\nan error\n" +
		".TP\n\\fB" + strconv.Itoa(wire.ExitUsage) + "\\fP\na usage error (bad flag, argument or address)\n" +
		".TP\n\\fB" + strconv.Itoa(lo) + "\\fP to \\fB" + strconv.Itoa(hi) + "\\fP\n" +
		roff(`a refusal, its word printed first ("peerctl: not_live: ..."): each code and word in EXIT STATUS of peerctl(1) (peerctl help exit-codes); which of them this command can give: its section of docs/COMMANDS.md (SEE ALSO)`) + "\n\n"
}

// environment is the ENVIRONMENT section: cli.Environment, a row a tagged
// paragraph.
func environment() string {
	var b strings.Builder
	b.WriteString(".SH ENVIRONMENT\n")
	for _, v := range cli.Environment() {
		b.WriteString(".TP\n\\fB" + roff(v.Names[0]) + "\\fP\n" + roff(v.Text()) + "\n")
	}
	b.WriteByte('\n')
	return b.String()
}

// files is the FILES section: cli.Files, a path a tagged paragraph.
func files() string {
	var b strings.Builder
	b.WriteString(".SH FILES\n")
	for _, f := range cli.Files {
		b.WriteString(".TP\n\\fI" + roff(f.Path) + "\\fP\n" + roff(f.Meaning) + "\n")
	}
	b.WriteByte('\n')
	return b.String()
}

// roff makes text safe in a roff text line: a backslash is written \e, a
// hyphen \- (a minus, as a flag's must be to be searched and copied), and
// a line cannot start with a control character (. or ').
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// disableAutoGenTag drops cobra's "Auto generated by spf13/cobra on <date>"
// section from every page.
func disableAutoGenTag(cmd *cobra.Command) {
	cmd.DisableAutoGenTag = true
	for _, sub := range cmd.Commands() {
		disableAutoGenTag(sub)
	}
}

// showNoValueDefaults makes each page show what a flag given without a
// value means, as help does (--await-reply[=10m0s], --debug[="send"]):
// cobra's man pages (cobra v1.10, doc.manPrintFlags) put the flag's unset
// default in those brackets (--await-reply[=0s], --debug[=""]). Only the
// tree built for the pages is changed.
func showNoValueDefaults(cmd *cobra.Command) {
	set := func(f *pflag.Flag) {
		if f.NoOptDefVal != "" {
			f.DefValue = f.NoOptDefVal
		}
	}
	cmd.Flags().VisitAll(set)
	cmd.PersistentFlags().VisitAll(set)
	for _, sub := range cmd.Commands() {
		showNoValueDefaults(sub)
	}
}

// optionRE is a flag's line in cobra's OPTIONS: "\fB-h\fP, \fB--help\fP[=false]",
// "\fB--host\fP=[]", "\fB--claude\fP=\"\"".
var optionRE = regexp.MustCompile(`^(?:\\fB-[^\\]+\\fP, )?\\fB--([^\\]+)\\fP(.*)$`)

// optionLines rewrites cobra's flag lines in page, cmd's (cobra v1.10,
// doc.manPrintFlags, writes each flag's default after "=" whatever it is:
// --dry-run[=true], -h, --help[=false], --host=[], --claude=""): a bool
// flag is its name alone, a flag with a value its name and the value's
// name (--host=DEST, the usage's `NAME` or the flag's own name), with its
// default after when it has one; a flag whose value may be left out keeps
// what it means then (--await-reply[=10m]).
func optionLines(cmd *cobra.Command, page string) string {
	lines := strings.Split(page, "\n")
	for i, l := range lines {
		m := optionRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := cmd.Flags().Lookup(m[1])
		if f == nil {
			f = cmd.InheritedFlags().Lookup(m[1])
		}
		if f == nil {
			continue
		}
		head := strings.TrimSuffix(l, m[2])
		switch {
		case f.Value.Type() == "bool":
			lines[i] = head
		case f.NoOptDefVal != "":
		default:
			name, _ := pflag.UnquoteUsage(f)
			if name == "" || name == f.Value.Type() || strings.ContainsAny(name, " []") {
				name = f.Name
			}
			lines[i] = head + `=\fI` + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + `\fP`
			if d := f.DefValue; d != "" && d != "[]" && d != "0" && d != "0s" {
				lines[i] += " (default " + roff(d) + ")"
			}
		}
	}
	return strings.Join(lines, "\n")
}

// exampleWidth is the widest an EXAMPLE line may be: man indents the
// block by 7 columns, so that the page fits an 80-column terminal.
const exampleWidth = 80 - 7

// fitExamples fits the lines of page's EXAMPLE block (cobra's Example
// text, between .EX and .EE) within exampleWidth: each line loses the two
// spaces --help indents it by (man indents the block itself); a longer
// one has its trailing "# comment" put on a line of its own above it, and
// a command still longer is broken with a backslash (breakAt) and goes on
// 4 columns further in, which a shell reads the same. A comment line, or
// a line with no place to break, is left as it is (the tests say so).
func fitExamples(page string) string {
	head, rest, ok := strings.Cut(page, "\n.EX\n")
	if !ok {
		return page
	}
	block, tail, ok := strings.Cut(rest, "\n.EE\n")
	if !ok {
		return page
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimPrefix(l, "  ")
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		if shownLen(l) > exampleWidth {
			if at := commentAt(l); at > 0 {
				lines = append(lines, indent+l[at:])
				l = strings.TrimRight(l[:at], " ")
			}
		}
		for shownLen(l) > exampleWidth && !strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
			at := breakAt(l, exampleWidth-2)
			if at <= len(indent) {
				break
			}
			lines = append(lines, l[:at]+" \\\\")
			l = indent + "    " + strings.TrimLeft(l[at:], " ")
		}
		lines = append(lines, l)
	}
	return head + "\n.EX\n" + strings.Join(lines, "\n") + "\n.EE\n" + tail
}

// shownLen is how many columns an example line (roff, a backslash
// written \\) takes.
func shownLen(l string) int { return len([]rune(strings.ReplaceAll(l, `\\`, `\`))) }

// commentAt is where a shell comment starts in l (a # outside quotes
// after a space), or -1.
func commentAt(l string) int {
	at := -1
	scanShell(l, func(i int, c byte) bool {
		if c == '#' && i > 0 && l[i-1] == ' ' {
			at = i
			return false
		}
		return true
	})
	return at
}

// breakAt is where to break l so that its first part takes at most width
// columns: the last space outside quotes before a pipe or a redirection
// that fits, else the last such space before any word, else -1.
func breakAt(l string, width int) int {
	at, pipe := -1, -1
	scanShell(l, func(i int, c byte) bool {
		if shownLen(l[:i]) > width {
			return false
		}
		if c == ' ' && i > 0 && l[i-1] != ' ' {
			at = i
			if i+1 < len(l) && strings.IndexByte("|>", l[i+1]) >= 0 {
				pipe = i
			}
		}
		return true
	})
	if pipe > 0 {
		return pipe
	}
	return at
}

// scanShell calls f with each byte of l outside single and double quotes
// and its index, until f returns false.
func scanShell(l string, f func(int, byte) bool) {
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case !f(i, c):
			return
		}
	}
}
