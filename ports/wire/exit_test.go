package wire

import (
	"os"
	"path/filepath"
	"regexp"
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

// TestExitCodesTable: one row per code, in code order from 0 (a code
// may be left out: it is a refusal's that is not in this build), and one
// per refusal reason, which ExitCode gives.
func TestExitCodesTable(t *testing.T) {
	byCode := map[int]ExitRow{}
	for i, r := range ExitCodes {
		if i == 0 {
			assert.Equal(t, ExitOK, r.Code, "row 0")
		} else {
			assert.Greater(t, r.Code, ExitCodes[i-1].Code, "row %d", i)
		}
		assert.NotEmpty(t, r.Meaning)
		assert.Equal(t, r.Code, KnownExit(r.Code))
		byCode[r.Code] = r
	}
	assert.Equal(t, ExitError, KnownExit(ExitCodes[len(ExitCodes)-1].Code+1))
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
		assert.Equal(t, r.String(), byCode[code].Word(), "exit code of %s", r)
	}
	assert.Len(t, seen, len(domain.Reasons()))
	assert.Equal(t, ExitError, ExitCode(0))
}

// TestDocsNameEachReasonsCode: wherever docs/*.md writes a reason with
// its code ("`outcome_unknown` (exit 12", "`wrong_state`, exit 16"), the
// code is ExitCodes'.
func TestDocsNameEachReasonsCode(t *testing.T) {
	code := map[string]int{}
	for _, r := range ExitCodes {
		if w := r.Word(); w != "" {
			code[w] = r.Code
		}
	}
	mention := regexp.MustCompile("`([a-z_]+)`(?: \\(|, )exit (\\d+)")
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	checked := 0
	for _, path := range docs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, m := range mention.FindAllStringSubmatch(strings.ReplaceAll(string(b), "\n", " "), -1) {
			want, ok := code[m[1]]
			if !ok {
				continue // a word of another table (a status, an outcome)
			}
			checked++
			assert.Equal(t, strconv.Itoa(want), m[2], "%s: %s", filepath.Base(path), m[0])
		}
	}
	assert.NotZero(t, checked)
}
