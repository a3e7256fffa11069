package wiring_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wiring"
)

// The files that name the harnesses in prose, typed by hand (the plug-in's
// description people install, the skill, the README, the test command's
// headers): each list of harness titles in them names every plug-in. A
// list is titles joined by ", ", " and ", " or " (across a line break and
// a comment's "#" too); one that leaves out Claude Code alone is the
// "others too" form ("Qwen Code, Codex and opencode sessions are listed
// too") and holds.
func TestDocsNameEveryHarness(t *testing.T) {
	files := []string{
		"README.md",
		"skills/peerctl/SKILL.md",
		".claude-plugin/plugin.json",
		".claude-plugin/marketplace.json",
		".ci/run",
		"Makefile",
		"docs/HOW-IT-WORKS.md",
	}
	// Lists that are about those harnesses alone, not all of them.
	meant := []string{
		"what real Claude Code and Qwen Code do, measured", // README: the two facts documents
	}

	var titles []string
	for _, p := range wiring.Plugins() {
		titles = append(titles, regexp.QuoteMeta(p.Kind.Title()))
	}
	title := "(?:" + strings.Join(titles, "|") + ")"
	list := regexp.MustCompile(title + `(?:(?:,\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+)(?:#\s+)?` + title + `)+`)

	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f)))
		require.NoError(t, err)
		text := string(b)
		found := 0
		for _, loc := range list.FindAllStringIndex(text, -1) {
			found++
			l := text[loc[0]:loc[1]]
			line := strings.Count(text[:loc[0]], "\n") + 1
			if isMeant(text, loc, meant) {
				continue
			}
			var missing []string
			for _, p := range wiring.Plugins() {
				if !strings.Contains(l, p.Kind.Title()) && p.Kind != domain.HarnessClaudeCode {
					missing = append(missing, p.Kind.Title())
				}
			}
			assert.Empty(t, missing, "%s:%d: %q leaves out %v", f, line, l, missing)
		}
		assert.Positive(t, found, "%s names the harnesses nowhere: is the list gone, or the file moved?", f)
	}

	// What people install and read first names every harness itself.
	for _, f := range []string{".claude-plugin/plugin.json", ".claude-plugin/marketplace.json", "skills/peerctl/SKILL.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f)))
		require.NoError(t, err)
		for _, p := range wiring.Plugins() {
			assert.Contains(t, string(b), p.Kind.Title(), "%s", f)
		}
	}
}

// isMeant reports whether the list at loc is inside one of the phrases
// meant (a list of some harnesses on purpose).
func isMeant(text string, loc []int, meant []string) bool {
	for _, m := range meant {
		for i := 0; ; {
			j := strings.Index(text[i:], m)
			if j < 0 {
				break
			}
			if start := i + j; start <= loc[0] && loc[1] <= start+len(m) {
				return true
			}
			i += j + 1
		}
	}
	return false
}
