package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// envReads finds, in a Go source file, the environment variables it
// reads: getenv("X") (any getenv, Getenv, LookupEnv), a constant or field
// named ...Env = "X" or Env: "X", and a harness's Markers: []string{"X", ...}.
var envReads = []*regexp.Regexp{
	regexp.MustCompile(`(?:[gG]etenv|LookupEnv)\("([A-Z][A-Z0-9_]*)"\)`),
	regexp.MustCompile(`\b[A-Za-z]*Env[A-Za-z]*\s*=\s*"([A-Z][A-Z0-9_]*)"`),
	regexp.MustCompile(`\bEnv:\s*"([A-Z][A-Z0-9_]*)"`),
	regexp.MustCompile(`"([A-Z][A-Z0-9_]*)"`), // inside Markers (below)
}

var markers = regexp.MustCompile(`Markers:\s*\[\]string\{([^}]*)\}`)

// TestEnvironmentTableHasEveryVariable: every variable peerctl's code
// reads (its programs, app, adapters, internal; not tests, not the
// tools that build it) is a row of the environment table, which help
// environment prints.
func TestEnvironmentTableHasEveryVariable(t *testing.T) {
	known := map[string]bool{}
	for _, v := range environment {
		for _, n := range v.Names {
			known[n] = true
		}
	}
	found := map[string]string{}
	root := filepath.Join("..", "..")
	for _, top := range []string{"cmd", "app", "adapters", "internal", "domain", "ports"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "mangen" || d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") || strings.HasSuffix(d.Name(), "mock")) {
				// mangen is a build tool ($SOURCE_DATE_EPOCH is the build's);
				// ...test and ...mock packages are linked into tests only.
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			src := string(b)
			if strings.HasPrefix(src, "//go:build peerctlfault") {
				return nil // a test build's fault points: no release reads them
			}
			for _, re := range envReads[:3] {
				for _, m := range re.FindAllStringSubmatch(src, -1) {
					found[m[1]] = path
				}
			}
			for _, m := range markers.FindAllStringSubmatch(src, -1) {
				for _, q := range envReads[3].FindAllStringSubmatch(m[1], -1) {
					found[q[1]] = path
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Contains(t, found, "CLAUDE_CONFIG_DIR", "the scan finds what the code reads")
	require.Contains(t, found, "CLAUDECODE", "the scan finds the markers")
	for name, path := range found {
		assert.True(t, known[name], "%s reads $%s: add it to the environment table (internal/cli/environment.go)", path, name)
	}
}

func TestHelpEnvironment(t *testing.T) {
	r := evRun(t, nil, nil, "help", "environment")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	for _, v := range environment {
		assert.Regexp(t, `(?m)^  `+v.Names[0]+` +\S`, r.stdout)
		for _, also := range v.Names[1:] {
			assert.Contains(t, r.stdout, also)
		}
	}
	assert.Regexp(t, `(?m)^  CLAUDE_CONFIG_DIR +Claude Code's config `, r.stdout)
	assert.Regexp(t, `(?m)^  XDG_CONFIG_HOME +the hosts and trust policy files`, r.stdout, "the policy lives there too")
	// HOME is the ~ of every default, above it in the table and below.
	assert.Regexp(t, `(?m)^  HOME +the ~ of every default folder here$`, r.stdout)
	assert.NotContains(t, r.stdout, "folder below")
	r = evRun(t, nil, nil, "--help")
	assert.Contains(t, r.stdout, "peerctl help environment")
}
