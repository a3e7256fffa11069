package wire

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// exitCodesMarkdown is ExitCodes as docs/OUTPUT.md writes it: a Markdown
// table, the word in backquotes.
func exitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | reason | meaning |\n|---|---|---|\n")
	for _, r := range ExitCodes {
		word := ""
		if w := r.Word(); w != "" {
			word = " `" + w + "`"
		}
		b.WriteString("| " + strconv.Itoa(r.Code) + " |" + word + " | " + r.Meaning + " |\n")
	}
	return b.String()
}

// TestExitCodesDocIsTheTable: docs/OUTPUT.md's exit-code table is
// ExitCodes, row for row and word for word (a row added, dropped, moved
// or reworded on either side fails it).
func TestExitCodesDocIsTheTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OUTPUT.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Exit codes\n")
	require.True(t, ok, "docs/OUTPUT.md has an Exit codes section")
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var table strings.Builder
	in := false
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "|") {
			in = true
			table.WriteString(line + "\n")
		} else if in {
			break
		}
	}
	assert.Equal(t, exitCodesMarkdown(), table.String(), "docs/OUTPUT.md#exit-codes is not ExitCodes (ports/wire/exit.go): write the same table in both")
}

// TestExitCodesTable: one row per code, in order from 0, and one per
// refusal reason, which ExitCode gives.
func TestExitCodesTable(t *testing.T) {
	for i, r := range ExitCodes {
		assert.Equal(t, i, r.Code, "row %d", i)
		assert.NotEmpty(t, r.Meaning)
		assert.Equal(t, r.Code, KnownExit(r.Code))
	}
	assert.Equal(t, ExitError, KnownExit(len(ExitCodes)))
	assert.Equal(t, ExitError, KnownExit(-1))
	seen := map[domain.Reason]int{}
	for _, r := range ExitCodes {
		if r.Reason != 0 {
			seen[r.Reason]++
		}
	}
	for _, r := range domain.Reasons() {
		assert.Equal(t, 1, seen[r], "reason %s has one row", r)
		code := ExitCode(r)
		assert.Equal(t, r.String(), ExitCodes[code].Word(), "exit code of %s", r)
	}
	assert.Len(t, seen, len(domain.Reasons()))
	assert.Equal(t, ExitError, ExitCode(0))
}
