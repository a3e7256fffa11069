package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/outboxstore"
)

// TestCommandsByTheirWord: each entry of commands builds the command its
// word runs, and the whole tree has no other command below the root than
// these and cobra's help.
func TestCommandsByTheirWord(t *testing.T) {
	c := newFactory(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" })
	names := map[string]bool{"help": true}
	for _, sc := range commands {
		assert.Equal(t, sc.name, sc.build(c).Name())
		names[sc.name] = true
	}
	for _, sub := range newRootCmd(c).Commands() {
		assert.True(t, names[sub.Name()], "%s is in commands", sub.Name())
	}
}

// TestOneCommandBuilt: a run whose first word names a command builds that
// command alone below the root (and cobra's help); a flag first, an
// unknown word, help, completion and the help topics build every command.
func TestOneCommandBuilt(t *testing.T) {
	c := newFactory(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" })
	built := func(args ...string) []string {
		var out []string
		for _, sub := range newRootCmdFor(c, invoked(args)).Commands() {
			out = append(out, sub.Name())
		}
		return out
	}
	assert.Equal(t, []string{"help", "list"}, built("list", "--json"))
	root := newRootCmdFor(c, "list")
	root.InitDefaultCompletionCmd()
	assert.Equal(t, []string{"help", "list"}, func() (out []string) {
		for _, sub := range root.Commands() {
			out = append(out, sub.Name())
		}
		return out
	}(), "cobra's own completion command is not made for a run of list")
	assert.Equal(t, []string{"help", "outbox"}, built("outbox", "show", "7"))
	every := len(commands) + 1
	for _, args := range [][]string{{}, {"--debug", "list"}, {"lsit"}, {"help", "list"}, {"completion", "bash"}, {"exit-codes"}, {"environment"}, {"__complete", "list", ""}} {
		assert.Len(t, built(args...), every, "peerctl %s", strings.Join(args, " "))
	}
}

// TestOneCommandReadsAsInTheWholeTree: for every command, its help, a
// flag it does not have, a flag misspelt and an argument too many print
// the same and exit the same whether the run builds that command alone
// (as every run now does) or the whole tree (as every run did).
func TestOneCommandReadsAsInTheWholeTree(t *testing.T) {
	runWith := func(lazy bool, args []string) evResult {
		var out, errb bytes.Buffer
		c := newFactory(strings.NewReader(""), &out, &errb, func(k string) string {
			if k == "COLUMNS" {
				return "100"
			}
			return ""
		})
		c.store = outboxstore.Store{}
		only := ""
		if lazy {
			only = invoked(args)
		}
		code := executeTree(context.Background(), c, args, only)
		return evResult{code: code, stdout: out.String(), stderr: errb.String()}
	}
	root := newRootCmd(newFactory(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" }))
	seen := 0
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if !cmd.HasParent() {
			return
		}
		path := strings.Fields(cmd.CommandPath())[1:]
		if invoked(path) == "" {
			return // built whole either way
		}
		seen++
		for _, extra := range [][]string{{"--help"}, {"-h"}, {"--no-such-flag"}, {"--jsn"}, {"--hots", "x"}, {"a", "b", "c", "d", "e", "f"}} {
			args := append(append([]string{}, path...), extra...)
			if extra[0] == "a" && (cmd.Name() == "enrich" || cmd.Runnable() && cmd.Args == nil || !cmd.Runnable() && !cmd.HasSubCommands()) {
				continue // would run (enrich reads any number of lines): not a question of the tree
			}
			whole, one := runWith(false, args), runWith(true, args)
			assert.Equal(t, whole, one, "peerctl %s", strings.Join(args, " "))
		}
	}
	walk(root)
	require.Greater(t, seen, 20, "the walk reached the commands")
}
