// Package layering holds the layers by test (the design's rule 11): domain
// imports only the standard library; ports only domain; adapters never
// app, the CLI or the MCP server, and a harness's adapters never another
// harness's; app no adapter; only the composition root (internal/wiring) wires
// the harness plug-ins.
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

// harnessAdapters are the adapter packages of each harness, keyed by its
// plug-in package (the one exporting Plugin); sharedAdapters serve every
// harness and import no harness's package. Every adapter package is in
// one of the two: a new one is placed here when it is added.
var (
	harnessAdapters = map[string][]string{
		"adapters/claudecode": {"adapters/courierexec", "adapters/fsregistry", "adapters/socketframe", "adapters/transcript"},
		"adapters/qwencode":   {"adapters/qwencli", "adapters/qweninbox", "adapters/qwenregistry"},
		"adapters/codex":      {"adapters/codexapp", "adapters/codexapp/codexapptest"},
		"adapters/opencode":   {},
	}
	sharedAdapters = []string{
		"adapters/busnode", "adapters/fswatch", "adapters/hostsfile", "adapters/internal/configfile", "adapters/internal/dirents", "adapters/internal/harnessfile", "adapters/internal/presence", "adapters/internal/repeat",
		"adapters/internal/sockowner", "adapters/natsbus", "adapters/outbox", "adapters/policyfile", "adapters/procgroup", "adapters/procliveness", "adapters/servesock",
		"adapters/sshhost",
	}
)

// adapterPkg is one adapter package as `go list` gives it: its folder,
// its non-test files, and its imports with its tests' (in-package and
// external) added.
type adapterPkg struct {
	dir     string
	files   []string
	imports []string
}

// adapterPackages lists every package under adapters/ by path.
func adapterPackages(t *testing.T) map[string]adapterPkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"/adapters/...").Output()
	require.NoError(t, err, "go list adapters")
	pkgs := map[string]adapterPkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		require.Len(t, f, 4, "%q", line)
		pkgs[strings.TrimPrefix(f[0], module+"/")] = adapterPkg{dir: f[1], files: strings.Fields(f[2]), imports: strings.Fields(f[3])}
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// TestNoAdapterImportsAnotherHarnessAdapter: a harness's adapters (its
// plug-in package and the packages only it uses) import no package of
// another harness, tests included; they may import the shared adapters,
// which import no harness's package. What holds today, by `go list`:
// claudecode imports courierexec, fsregistry and socketframe; qwencode
// imports qwencli, qweninbox and qwenregistry, and qweninbox qwenregistry;
// codex imports codexapp; harnesses import shared ones (procliveness,
// procgroup, internal/...), and no harness another's.
func TestNoAdapterImportsAnotherHarnessAdapter(t *testing.T) {
	owner := map[string]string{}
	for plugin, pkgs := range harnessAdapters {
		owner[plugin] = plugin
		for _, p := range pkgs {
			owner[p] = plugin
		}
	}
	pkgs := adapterPackages(t)
	for pkg, p := range pkgs {
		_, ok := owner[pkg]
		assert.True(t, ok || slices.Contains(sharedAdapters, pkg),
			"%s is neither a harness's adapter nor a shared one: place it in harnessAdapters or sharedAdapters", pkg)
		if exportsPlugin(t, p.dir, p.files) {
			assert.Equal(t, pkg, owner[pkg], "%s exports a harness plug-in but is not a key of harnessAdapters", pkg)
		}
		for _, imp := range p.imports {
			rel, mine := ours(imp)
			theirs, harness := owner[rel]
			if !mine || !harness {
				continue // not an adapter of a harness
			}
			if slices.Contains(sharedAdapters, pkg) {
				t.Errorf("%s is shared but imports %s, %s's: a shared adapter names no harness", pkg, rel, theirs)
			} else if own := owner[pkg]; own != theirs {
				t.Errorf("%s (%s's) imports %s (%s's): a harness's adapter never imports another harness's; share it through a shared adapter or ports", pkg, own, rel, theirs)
			}
		}
	}
	for p := range owner {
		assert.Contains(t, pkgs, p, "harnessAdapters names %s, which go list does not list", p)
	}
	for _, p := range sharedAdapters {
		assert.Contains(t, pkgs, p, "sharedAdapters names %s, which go list does not list", p)
	}
}

func TestAppImportsNoAdapter(t *testing.T) {
	for pkg, imps := range imports(t, module+"/app/...") {
		for _, imp := range imps {
			rel, mine := ours(imp)
			assert.False(t, mine && strings.HasPrefix(rel, "adapters/"),
				"%s imports %s: adapters are wired at the composition root, internal/wiring", pkg, imp)
		}
	}
}

// TestTheCommandLineBuildsNoAdapter: internal/cli asks internal/wiring,
// the composition root, for every adapter it uses and names none itself
// (the "the composition root builds every adapter").
func TestTheCommandLineBuildsNoAdapter(t *testing.T) {
	importsNoAdapter(t, "internal/cli/...", "the command line")
}

// TestTheServiceBuildsNoAdapter: internal/serve, peerctl serve, asks
// internal/wiring for its lock, socket, outbox, folder watcher and ssh
// channel as the command line does, and names no adapter itself.
func TestTheServiceBuildsNoAdapter(t *testing.T) {
	importsNoAdapter(t, "internal/serve/...", "the service")
}

// importsNoAdapter: no package of pattern (under the module) imports an
// adapter; who names them in the message.
func importsNoAdapter(t *testing.T, pattern, who string) {
	t.Helper()
	for pkg, imps := range imports(t, module+"/"+pattern) {
		for _, imp := range imps {
			rel, mine := ours(imp)
			assert.False(t, mine && strings.HasPrefix(rel, "adapters/"),
				"%s imports %s: %s asks internal/wiring for its adapters", pkg, imp, who)
		}
	}
}

// TestTheCompositionRootHoldsEveryHarnessPlugin: every adapter package
// that exports a harness plug-in (a package-level Plugin) is in
// internal/wiring's list, so a harness is added there with one line and never
// wired anywhere else.
func TestTheCompositionRootHoldsEveryHarnessPlugin(t *testing.T) {
	pkgs := imports(t, module+"/internal/wiring")
	var wired []string
	for _, imp := range pkgs["internal/wiring"] {
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
		assert.Contains(t, wired, p, "%s exports a harness plug-in that internal/wiring does not wire", p)
	}
	for pkg, imps := range imports(t, module+"/...") {
		if pkg == "internal/wiring" {
			continue
		}
		for _, imp := range imps {
			rel, _ := ours(imp)
			assert.False(t, slices.Contains(plugins, rel) && !strings.HasPrefix(pkg, "adapters/") && !strings.HasPrefix(pkg, "test/"),
				"%s imports the harness plug-in %s: only internal/wiring wires plug-ins", pkg, rel)
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

// layer ranks a package of the module: an import may only point to a
// lower rank, or within its own group (adapters among adapters, ports
// among ports, the command-line programs' internal packages among
// themselves). domain 0; ports and the contract between nodes
// (ports/wire, ports/jsonexact, ports/lines) 1; adapters and app 2 (and
// neither imports the other); the composition root, internal/wiring, 3;
// the rest of internal/ 4; cmd/ 5. test/ helpers are not ranked.
func layer(pkg string) (rank int, group string, ok bool) {
	switch {
	case pkg == "domain" || strings.HasPrefix(pkg, "domain/"):
		return 0, "domain", true
	case pkg == "ports" || strings.HasPrefix(pkg, "ports/"):
		return 1, "ports", true
	case strings.HasPrefix(pkg, "adapters/"):
		return 2, "adapters", true
	case pkg == "app" || strings.HasPrefix(pkg, "app/"):
		return 2, "app", true
	case pkg == "internal/wiring":
		return 3, "wiring", true
	case strings.HasPrefix(pkg, "internal/"):
		return 4, "internal", true
	case strings.HasPrefix(pkg, "cmd/"):
		return 5, "cmd", true
	}
	return 0, "", false
}

// TestNoImportRunsBackUpTheLayers: every import inside the module points
// down the layers (layer), never up: a leaf that adapters need lives
// beside ports, and the composition root is a library the programs and
// the service share, not a package under cmd/.
func TestNoImportRunsBackUpTheLayers(t *testing.T) {
	for pkg, imps := range imports(t, module+"/...") {
		rank, group, ranked := layer(pkg)
		if !ranked {
			continue
		}
		for _, imp := range imps {
			rel, mine := ours(imp)
			if !mine {
				continue
			}
			r, g, ok := layer(rel)
			if !ok {
				t.Errorf("%s imports %s, which is no layer's (test helpers are for tests)", pkg, rel)
				continue
			}
			if g == group && g != "app" {
				continue
			}
			assert.True(t, r < rank, "%s (layer %d) imports %s (layer %d): an import runs back up the layers", pkg, rank, rel, r)
		}
	}
}

// TestTheProductLinksNoNATSServer: the programs link the NATS client
// (adapters/natsbus) and never the server, which is a test-only module
// (an embedded server in unit tests, about 14 MB more in a binary); domain
// and app link no NATS package at all (the bus is an adapter).
func TestTheProductLinksNoNATSServer(t *testing.T) {
	deps := func(pattern string) []string { return deps(t, pattern) }
	cmds := deps(module + "/cmd/...")
	require.Contains(t, cmds, "github.com/nats-io/nats.go", "the programs link the bus's client")
	for _, d := range cmds {
		assert.False(t, strings.HasPrefix(d, "github.com/nats-io/nats-server"), "the programs link %s: the server is for tests only", d)
	}
	for _, pattern := range []string{module + "/domain/...", module + "/app/..."} {
		for _, d := range deps(pattern) {
			assert.False(t, strings.HasPrefix(d, "github.com/nats-io/"), "%s links %s: the bus is an adapter", pattern, d)
		}
	}
}

// deps is every package pattern links (go list -deps).
func deps(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pattern).Output()
	require.NoError(t, err, "go list -deps %s", pattern)
	return strings.Fields(string(out))
}

// TestOnlyPeerctlMCPLinksTheOutboxStore: the outbox's store, SQLite
// (adapters/outbox over modernc.org/sqlite and modernc.org/libc), is
// linked into peerctl-mcp only: in peerctl its package initialisation and
// 6 MB of binary cost every command, `list` among them, about a tenth of
// its start-up (docs/PERFORMANCE.md). peerctl runs serve, watch and the
// outbox commands as peerctl-mcp (internal/cli's runWithStore).
func TestOnlyPeerctlMCPLinksTheOutboxStore(t *testing.T) {
	peerctl, mcp := deps(t, module+"/cmd/peerctl"), deps(t, module+"/cmd/peerctl-mcp")
	for _, pkg := range []string{module + "/adapters/outbox", "modernc.org/sqlite", "modernc.org/libc"} {
		assert.False(t, slices.Contains(peerctl, pkg), "peerctl links %s: a command that needs the outbox's store runs as peerctl-mcp", pkg)
		assert.True(t, slices.Contains(mcp, pkg), "peerctl-mcp links %s: it runs serve", pkg)
	}
}

// TestOnlyPeerctlMCPLinksTheJQFilter: gojq (internal/jqfilter) is linked
// into peerctl-mcp only: its package initialisation builds its builtin
// table (219 KB, 2,278 allocations) at every start of every command, `list`
// among them, about a tenth of its CPU (docs/PERFORMANCE.md). peerctl runs
// a command line with --jq as peerctl-mcp (internal/cli's jqWithFilter).
// Nor does peerctl link encoding/xml, whose initialisation a launchd
// plist's escaping does not need.
func TestOnlyPeerctlMCPLinksTheJQFilter(t *testing.T) {
	peerctl, mcp := deps(t, module+"/cmd/peerctl"), deps(t, module+"/cmd/peerctl-mcp")
	for _, pkg := range []string{module + "/internal/jqfilter", "github.com/itchyny/gojq"} {
		assert.False(t, slices.Contains(peerctl, pkg), "peerctl links %s: a command line with --jq runs as peerctl-mcp", pkg)
		assert.True(t, slices.Contains(mcp, pkg), "peerctl-mcp links %s: it runs --jq", pkg)
	}
	assert.NotContains(t, peerctl, "encoding/xml", "peerctl links encoding/xml")
}
