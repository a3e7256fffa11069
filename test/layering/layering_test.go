// Package layering holds the layers by test (the design's rule 11): domain
// imports only the standard library; ports only domain; adapters never
// app, the CLI or the MCP server; app no adapter but the ones listed in
// appAdapterDebt, which may only shrink.
package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/peerctl/peerctl"

// appAdapterDebt are the adapters app/ still imports: app/fx.go wires the
// harness plug-ins and the watchers itself instead of the composition root
// handing them in. Each entry must still be imported (the test fails
// otherwise, so the list shrinks as the wiring moves); nothing may join it.
var appAdapterDebt = []string{
	"adapters/claudecode", "adapters/codex", "adapters/fswatch", "adapters/opencode",
	"adapters/procliveness", "adapters/qwencode", "adapters/transcript",
}

// imports lists, with `go list`, every package of the module matching
// pattern and its non-test imports.
func imports(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pattern).Output()
	require.NoError(t, err, "go list %s", pattern)
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		require.NotEmpty(t, f)
		pkgs[strings.TrimPrefix(f[0], module+"/")] = f[1:]
	}
	require.NotEmpty(t, pkgs, "go list %s listed nothing", pattern)
	return pkgs
}

// stdlib reports whether an import path is the standard library's (no dot
// in its first element).
func stdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func ours(path string) (string, bool) { return strings.CutPrefix(path, module+"/") }

func TestDomainImportsOnlyTheStandardLibrary(t *testing.T) {
	for pkg, imps := range imports(t, module+"/domain/...") {
		for _, imp := range imps {
			assert.True(t, stdlib(imp), "%s imports %s", pkg, imp)
		}
	}
}

func TestPortsImportOnlyDomain(t *testing.T) {
	for pkg, imps := range imports(t, module+"/ports") {
		for _, imp := range imps {
			rel, mine := ours(imp)
			assert.True(t, stdlib(imp) || mine && rel == "domain", "%s imports %s", pkg, imp)
		}
	}
}

func TestAdaptersNeverImportAppOrTheCLI(t *testing.T) {
	for pkg, imps := range imports(t, module+"/adapters/...") {
		for _, imp := range imps {
			rel, mine := ours(imp)
			if !mine {
				continue
			}
			bad := rel == "app" || strings.HasPrefix(rel, "app/") || strings.HasPrefix(rel, "cmd/") ||
				slices.Contains([]string{"internal/cli", "internal/mcpserve", "internal/mcptools"}, rel)
			assert.False(t, bad, "%s imports %s", pkg, imp)
		}
	}
}

func TestAppImportsNoNewAdapter(t *testing.T) {
	seen := map[string]bool{}
	for pkg, imps := range imports(t, module+"/app") {
		for _, imp := range imps {
			rel, mine := ours(imp)
			if !mine || !strings.HasPrefix(rel, "adapters/") {
				continue
			}
			seen[rel] = true
			assert.Contains(t, appAdapterDebt, rel, "%s imports %s: adapters are wired at the composition root", pkg, imp)
		}
	}
	for _, d := range appAdapterDebt {
		assert.True(t, seen[d], "app no longer imports %s: take it off appAdapterDebt", d)
	}
}
