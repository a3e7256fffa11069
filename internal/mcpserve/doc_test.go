package mcpserve

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docToolRow is a row of docs/HOW-IT-WORKS.md's MCP tool table:
// | `tool` | arguments | result |.
var docToolRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| ([^|]*) \\|")

// docArg is an argument as the table names it: `name`, `name`? when
// optional.
var docArg = regexp.MustCompile("`([a-z_]+)`(\\?)?")

// withoutParens is s with every parenthesised part taken out (the
// table's notes on an argument: its values, its range).
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docs/HOW-IT-WORKS.md's MCP tool table names every argument of every
// tool the server offers, each marked optional (?) exactly when the
// server's input schema does not require it, and no argument the server
// does not have.
func TestHowItWorksToolTableIsTheServersSchema(t *testing.T) {
	s := startServer(t, fakeTools(make(chan string, 1)))
	s.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	s.waitFor("1")
	out := s.out.String()
	s.stop()
	var listed struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	line := out[strings.Index(out, `{"jsonrpc":"2.0","id":1,`):]
	line, _, _ = strings.Cut(line, "\n")
	require.NoError(t, json.Unmarshal([]byte(line), &listed), line)
	server := map[string]map[string]bool{} // tool → argument → optional
	for _, tool := range listed.Result.Tools {
		server[tool.Name] = map[string]bool{}
		for name := range tool.InputSchema.Properties {
			server[tool.Name][name] = !slices.Contains(tool.InputSchema.Required, name)
		}
	}
	require.Len(t, server, 3, out)

	b, err := os.ReadFile("../../docs/HOW-IT-WORKS.md")
	require.NoError(t, err)
	doc := map[string]map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		m := docToolRow.FindStringSubmatch(l)
		if m == nil || server[m[1]] == nil {
			continue
		}
		doc[m[1]] = map[string]bool{}
		for _, a := range docArg.FindAllStringSubmatch(withoutParens(m[2]), -1) {
			doc[m[1]][a[1]] = a[2] == "?"
		}
	}
	assert.Equal(t, server, doc, "docs/HOW-IT-WORKS.md's MCP tool table: name each argument of the server's schema, `name`? when optional")
}
