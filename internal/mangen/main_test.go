package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/cli"
	"github.com/peerctl/peerctl/ports/wire"
)

func TestWriteOnePagePerCommand(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	for page, title := range map[string]string{"peerctl.1": "PEERCTL", "peerctl-send.1": "PEERCTL-SEND", "peerctl-list.1": "PEERCTL-LIST",
		"peerctl-mcp.1": "PEERCTL-MCP", "peerctl-endpoint-parse.1": "PEERCTL-ENDPOINT-PARSE"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if assert.NoError(t, err, page) {
			assert.Contains(t, string(b), `.TH "`+title+`" "1" "Jan 2026" "peerctl" "peerctl manual"`, "%s: its own title", page)
			assert.NotContains(t, string(b), "Auto generated", page)
		}
	}
	send, err := os.ReadFile(filepath.Join(dir, "peerctl-send.1"))
	require.NoError(t, err)
	assert.Contains(t, string(send), "await-reply", "the flags are on the page")
	// A flag's value when given without one, as help shows it; not its unset default.
	for _, want := range []string{`\fB--await-reply\fP[=10m]`, `\fB--wait\fP[=10m]`, `\fB--debug\fP[="send"]`} {
		assert.Contains(t, string(send), want)
	}
	_, err = os.Stat(filepath.Join(dir, "peerctl-exit-codes.1"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a help topic is a section of every page, not a page")
}

// Every page has the sections a man page has, in man's order; its
// DESCRIPTION is what the command does, not run together with where its
// docs and exit codes are (those are SEE ALSO and EXIT STATUS).
// peerctl(1) has EXIT STATUS, ENVIRONMENT and FILES whole (the exit-code,
// environment and files tables); a command's page does not repeat them:
// its EXIT STATUS is short and its SEE ALSO points at peerctl(1).
func TestPageSections(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(pages), 20)
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(dir, p.Name()))
		require.NoError(t, err)
		page := string(b)
		root := p.Name() == "peerctl.1"
		order := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"}
		if !root {
			order = []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"}
			assert.NotContains(t, page, "\n.SH ENVIRONMENT\n", "%s: the environment is peerctl(1)'s", p.Name())
			assert.NotContains(t, page, "\n.SH FILES\n", "%s: the files are peerctl(1)'s", p.Name())
		}
		at := -1
		for _, sec := range order {
			i := strings.Index(page, "\n.SH "+sec+"\n")
			if assert.True(t, i > at, "%s: %s after the sections before it", p.Name(), sec) {
				at = i
			}
		}
		desc := section(page, "DESCRIPTION")
		assert.NotContains(t, desc, "In full: https:", p.Name())
		assert.NotContains(t, desc, "exit codes:", p.Name())
		exits := section(page, "EXIT STATUS")
		for _, code := range []int{wire.ExitOK, wire.ExitError, wire.ExitUsage} {
			assert.Contains(t, exits, ".TP\n\\fB"+strconv.Itoa(code)+"\\fP\n", "%s: exit %d", p.Name(), code)
		}
		seeAlso := section(page, "SEE ALSO")
		assert.Contains(t, seeAlso, `https://github.com/peerctl/peerctl/blob/main/docs/COMMANDS.md`)
		if !root {
			last := wire.ExitCodes[len(wire.ExitCodes)-1].Code
			assert.Contains(t, exits, `\fB`+strconv.Itoa(wire.ExitNotLive)+`\fP to \fB`+strconv.Itoa(last)+`\fP`, "%s: the refusals' codes", p.Name())
			assert.Contains(t, exits, `EXIT STATUS of peerctl(1)`, p.Name())
			assert.NotContains(t, exits, `\fInot_found\fP`, "%s: the refusals are told once, in peerctl(1)", p.Name())
			assert.LessOrEqual(t, strings.Count(exits, "\n"), 16, "%s: a short EXIT STATUS", p.Name())
			assert.Contains(t, seeAlso, `\fBpeerctl(1)\fP: every exit code, environment variable and file`, p.Name())
			assert.Equal(t, 1, strings.Count(seeAlso, `\fBpeerctl(1)\fP`), "%s: peerctl(1) named once:\n%s", p.Name(), seeAlso)
			assert.Contains(t, seeAlso, `\fBpeerctl help environment\fP`, p.Name())
			continue
		}
		for _, r := range wire.ExitCodes {
			assert.Contains(t, exits, ".TP\n\\fB"+strconv.Itoa(r.Code)+"\\fP", "%s: exit %d", p.Name(), r.Code)
		}
		assert.Contains(t, exits, `\fInot_found\fP`)
		env := section(page, "ENVIRONMENT")
		for _, v := range cli.Environment() {
			for _, n := range v.Names {
				assert.Contains(t, env, strings.ReplaceAll(n, "-", `\-`), "%s: $%s", p.Name(), n)
			}
		}
		assert.Contains(t, section(page, "FILES"), "outbox.db")
	}
	send, err := os.ReadFile(filepath.Join(dir, "peerctl-send.1"))
	require.NoError(t, err)
	assert.Contains(t, section(string(send), "SEE ALSO"), `COMMANDS.md#peerctl\-send (the command in full)`)
	assert.Equal(t, "Deliver TEXT (or stdin, with \"-\") into one live Claude Code, Qwen Code, Codex or opencode session, safely.",
		strings.TrimSpace(section(string(send), "DESCRIPTION")))
}

// section is the text of a page's section name, up to the next.
func section(page, name string) string {
	_, s, _ := strings.Cut(page, "\n.SH "+name+"\n")
	s, _, _ = strings.Cut(s, "\n.SH ")
	return s
}

// The Homebrew cask (.goreleaser.yaml) names every man page, one by one:
// a cask's manpages take no pattern, so a new command's page would be
// left out.
func TestCaskNamesEveryPage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	config, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(config), "homebrew_casks:")
	for _, p := range pages {
		assert.Contains(t, string(config), "      - man/man1/"+p.Name()+"\n", "the cask's manpages")
	}
}

// Every paragraph of a command's Long help reaches its page's
// DESCRIPTION, those after the lines that point at the docs and the exit
// codes too: policy nats-config's page keeps its security steps.
func TestDescriptionHasEveryParagraph(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
		name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		desc := strings.Join(strings.Fields(section(string(b), "DESCRIPTION")), " ")
		for _, para := range strings.Split(cmd.Long, "\n\n") {
			var kept []string // without the lines SEE ALSO and EXIT STATUS say
			for _, line := range strings.Split(para, "\n") {
				if !strings.HasPrefix(line, "In full: ") && !strings.HasPrefix(line, "Its exit codes: ") {
					kept = append(kept, line)
				}
			}
			words := strings.Fields(strings.Join(kept, " "))
			if len(words) == 0 {
				continue
			}
			last := strings.Join(words[max(0, len(words)-3):], " ")
			assert.Contains(t, desc, last, "%s: a paragraph of its --help", name)
		}
	}
	walk(cli.CommandTree())
	b, err := os.ReadFile(filepath.Join(dir, "peerctl-policy-nats-config.1"))
	require.NoError(t, err)
	assert.Contains(t, section(string(b), "DESCRIPTION"), "a node not named in it cannot connect")
}

// Every EXAMPLE line fits an 80-column terminal as man shows it: man
// indents the block by 7 columns, so a line takes at most 73.
func TestExamplesFit80Columns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(dir, p.Name()))
		require.NoError(t, err)
		_, rest, ok := strings.Cut(string(b), "\n.SH EXAMPLE\n.EX\n")
		require.True(t, ok, "%s has no EXAMPLE", p.Name())
		block, _, ok := strings.Cut(rest, "\n.EE\n")
		require.True(t, ok, p.Name())
		for _, l := range strings.Split(block, "\n") {
			assert.LessOrEqual(t, 7+shownLen(l), 80, "%s: %q", p.Name(), l)
		}
	}
}

// fitExamples: the help's indent goes, a long line's comment goes above
// it, a long command breaks before a pipe, with a backslash; quotes are
// never broken.
func TestFitExamples(t *testing.T) {
	long, mid := strings.Repeat("x", 60), strings.Repeat("y", 50)
	page := ".SH EXAMPLE\n.EX\n  peerctl list\n  peerctl send " + mid + " hi   # a comment\n  echo '" + long + " a b' | peerctl relay --name ci-bot\n.EE\n"
	assert.Equal(t, ".SH EXAMPLE\n.EX\npeerctl list\n# a comment\npeerctl send "+mid+" hi\necho '"+long+" a b' \\\\\n    | peerctl relay --name ci-bot\n.EE\n", fitExamples(page))
}

// TestOptionLines: a bool flag is its name alone (not --dry-run[=true],
// -h, --help[=false]), a flag with a value names the value (--host=DEST,
// not --host=[]; --claude=CLAUDE, not --claude=""), and the root's
// SYNOPSIS is "peerctl [command]".
func TestOptionLines(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, write(dir))
	b, err := os.ReadFile(filepath.Join(dir, "peerctl-send.1"))
	require.NoError(t, err)
	send := string(b)
	for _, want := range []string{"\n\\fB--dry-run\\fP\n", "\n\\fB-h\\fP, \\fB--help\\fP\n", "\n\\fB--host\\fP=\\fIDEST\\fP\n",
		"\n\\fB--claude\\fP=\\fICLAUDE\\fP\n", "\n\\fB--timeout\\fP=\\fITIMEOUT\\fP (default 30s)\n", "\n\\fB--await-reply\\fP[=10m]\n"} {
		assert.Contains(t, send, want)
	}
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(dir, p.Name()))
		require.NoError(t, err)
		for _, bad := range []string{`\fP=""`, `\fP=[]`, `[=true]`, `[=false]`} {
			assert.NotContains(t, string(b), bad, p.Name())
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "peerctl.1"))
	require.NoError(t, err)
	assert.Contains(t, string(b), ".SH SYNOPSIS\n\\fBpeerctl [command]\\fP\n")
}
