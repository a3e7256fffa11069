package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
// docs and exit codes are (those are SEE ALSO and EXIT STATUS); EXIT
// STATUS is the exit-code table, ENVIRONMENT the environment table.
func TestPageSections(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	pages, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(pages), 20)
	order := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(dir, p.Name()))
		require.NoError(t, err)
		page := string(b)
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
		assert.Contains(t, section(page, "SEE ALSO"), `https://github.com/peerctl/peerctl/blob/main/docs/COMMANDS.md`)
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
