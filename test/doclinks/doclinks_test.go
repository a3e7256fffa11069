// Package doclinks holds that every link inside the project's Markdown
// (README.md, docs/, skills/) and every docs link a --help prints lands:
// the file exists, and a #fragment names a heading of it as GitHub makes
// heading anchors.
package doclinks

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/peerctl/peerctl/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's top folder, from this package's.
const root = "../.."

// repoURL is how --help and the docs name a file of the repository on
// GitHub; such a link is checked as the file it names.
const repoURL = "https://github.com/peerctl/peerctl/blob/main/"

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	htmlID   = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fence    = regexp.MustCompile("^ {0,3}(```|~~~)")
	inGoText = regexp.MustCompile(`\b((?:docs/)?[A-Z][A-Za-z0-9_-]*\.md)#([A-Za-z0-9_-]+)`)
)

// slug is the anchor GitHub gives a heading: lower case, characters other
// than letters, digits, spaces, - and _ dropped (markup with them), each
// space a -.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the fragments a Markdown file has: its headings' slugs (a
// repeated one with -1, -2, ... as GitHub numbers them) and its explicit
// <a name> or <a id> anchors. Headings inside fenced code do not count.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// markdownFiles are the project's Markdown files (not those of the Go
// module cache or of test data).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// TestMarkdownLinksLand: every relative link of every Markdown file names
// a file that exists, and its fragment a heading there.
func TestMarkdownLinksLand(t *testing.T) {
	files := markdownFiles(t)
	require.NotEmpty(t, files)
	cache := map[string]map[string]bool{}
	anchorsOf := func(p string) map[string]bool {
		if cache[p] == nil {
			cache[p] = anchors(t, p)
		}
		return cache[p]
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		inFence := false
		for n, line := range strings.Split(string(b), "\n") {
			if fence.MatchString(line) {
				inFence = !inFence
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if rest, ok := strings.CutPrefix(target, repoURL); ok {
					target = filepath.Join(root, rest)
				} else if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				} else {
					file, _, _ := strings.Cut(target, "#")
					if file == "" {
						target = f + target
					} else {
						target = filepath.Join(filepath.Dir(f), target)
					}
				}
				file, frag, _ := strings.Cut(target, "#")
				where := fmt.Sprintf("%s:%d: %s", f, n+1, m[1])
				if _, err := os.Stat(file); !assert.NoError(t, err, "%s: no such file", where) {
					continue
				}
				checked++
				if frag != "" && strings.HasSuffix(file, ".md") {
					assert.True(t, anchorsOf(file)[frag], "%s: %s has no heading with the anchor #%s", where, file, frag)
				}
			}
		}
	}
	assert.Positive(t, checked)
}

// TestGoDocsLinksLand: a docs link with a fragment in Go source (a
// --help's or a refusal's pointer such as docs/OUTPUT.md#exit-codes)
// names a heading of that file. (The "In full:" lines helpLong makes are
// held by internal/cli's tests.)
func TestGoDocsLinksLand(t *testing.T) {
	checked := 0
	for _, top := range []string{"cmd", "internal", "app", "adapters", "domain", "ports"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range inGoText.FindAllStringSubmatch(string(b), -1) {
				if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
					m[1] = filepath.Join("docs", m[1]) // a docs file named alone
				}
				checked++
				assert.True(t, anchors(t, filepath.Join(root, m[1]))[m[2]], "%s links %s#%s, which has no such heading", p, m[1], m[2])
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Positive(t, checked)
}

// The README names the output protocol this release speaks (a far side of
// another is refused): it is ports.RemoteProtocol.
func TestReadmeNamesTheOutputProtocol(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`speaks output protocol (\d+)`).FindSubmatch(b)
	require.NotNil(t, m, "README.md says which output protocol this release speaks")
	assert.Equal(t, fmt.Sprint(ports.RemoteProtocol), string(m[1]))
}
