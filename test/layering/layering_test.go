// Package layering holds the layers by test (the design's rule 11): domain
// imports only the standard library; ports only domain; adapters never
// app, the CLI or the MCP server; app no adapter but the ones listed in
// appAdapterDebt, which may only shrink.
package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/peerctl/peerctl"

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

func TestAppImportsNoAdapter(t *testing.T) {
	for pkg, imps := range imports(t, module+"/app/...") {
		for _, imp := range imps {
			rel, mine := ours(imp)
			assert.False(t, mine && strings.HasPrefix(rel, "adapters/"),
				"%s imports %s: adapters are wired at the composition root, cmd/wiring", pkg, imp)
		}
	}
}

// TestTheCompositionRootHoldsEveryHarnessPlugin: every adapter package
// that exports a harness plug-in (a package-level Plugin) is in
// cmd/wiring's list, so a harness is added there with one line and never
// wired anywhere else.
func TestTheCompositionRootHoldsEveryHarnessPlugin(t *testing.T) {
	pkgs := imports(t, module+"/cmd/wiring")
	var wired []string
	for _, imp := range pkgs["cmd/wiring"] {
		if rel, mine := ours(imp); mine {
			wired = append(wired, rel)
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Dir}} {{join .GoFiles " "}}`, module+"/adapters/...").Output()
	require.NoError(t, err)
	var plugins []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		rel, _ := ours(f[0])
		if exportsPlugin(t, f[1], f[2:]) {
			plugins = append(plugins, rel)
		}
	}
	require.NotEmpty(t, plugins, "no adapter exports a Plugin")
	for _, p := range plugins {
		assert.Contains(t, wired, p, "%s exports a harness plug-in that cmd/wiring does not wire", p)
	}
	for pkg, imps := range imports(t, module+"/...") {
		if pkg == "cmd/wiring" {
			continue
		}
		for _, imp := range imps {
			rel, _ := ours(imp)
			assert.False(t, slices.Contains(plugins, rel) && !strings.HasPrefix(pkg, "adapters/") && !strings.HasPrefix(pkg, "test/"),
				"%s imports the harness plug-in %s: only cmd/wiring wires plug-ins", pkg, rel)
		}
	}
}

// exportsPlugin reports whether one of the package's files (in dir)
// declares the package-level harness plug-in, `var Plugin = `.
func exportsPlugin(t *testing.T, dir string, files []string) bool {
	t.Helper()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		if strings.Contains(string(b), "\nvar Plugin = ") {
			return true
		}
	}
	return false
}
