package cli

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// version --json's time is the one JSON time form (wire.RFC3339: UTC,
// three digits of milliseconds); the text shows it as people's times are
// shown, UTC to the second.
func TestVersionFromBuildInfo(t *testing.T) {
	tests := []struct {
		name      string
		info      *debug.BuildInfo
		ok        bool
		release   string
		want      versionJSON
		wantShort string
	}{
		{"tagged install", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/peerctl/peerctl", Version: "v1.4.0"}}, true, "",
			versionJSON{Module: "github.com/peerctl/peerctl", Version: "v1.4.0", GoVersion: "go1.26.1"}, "v1.4.0"},
		{"checkout with local changes", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/peerctl/peerctl", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-01-02T05:04:05+02:00"}, {Key: "vcs.modified", Value: "true"}}}, true, "",
			versionJSON{Module: "github.com/peerctl/peerctl", Version: "(devel)", GoVersion: "go1.26.1", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-01-02T03:04:05.000Z", Modified: true},
			"(devel) (0123456789ab, 2026-01-02T03:04:05Z, modified)"},
		{"no build info", nil, false, "", versionJSON{Module: "github.com/peerctl/peerctl", Version: "(unknown)", GoVersion: runtime.Version()}, "(unknown)"},
		{"release build", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/peerctl/peerctl", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}}, true,
			"v0.0.0-SNAPSHOT-0123456",
			versionJSON{Module: "github.com/peerctl/peerctl", Version: "v0.0.0-SNAPSHOT-0123456", GoVersion: "go1.26.1", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-01-02T03:04:05.000Z"},
			"v0.0.0-SNAPSHOT-0123456 (0123456789ab, 2026-01-02T03:04:05Z)"},
		{"release build without build info", nil, false, "v1.5.0", versionJSON{Module: "github.com/peerctl/peerctl", Version: "v1.5.0", GoVersion: runtime.Version()}, "v1.5.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.OS, tt.want.Arch, tt.want.OutputProtocol = runtime.GOOS, runtime.GOARCH, ports.RemoteProtocol
			fake := func(c *factory) {
				c.buildInfo = func() (*debug.BuildInfo, bool) { return tt.info, tt.ok }
				c.releaseVersion = tt.release
			}
			r := evRun(t, nil, fake, "version", "--json")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			var got versionJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
			assert.Equal(t, tt.want, got)

			r = evRun(t, nil, fake, "--version")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			assert.Equal(t, "peerctl "+tt.wantShort+"\n", r.stdout)

			r = evRun(t, nil, fake, "version")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			assert.True(t, strings.HasPrefix(r.stdout, "peerctl "+tt.want.Version+"\nmodule:   "+tt.want.Module+"\n"), r.stdout)
		})
	}
}

// TestInstallStampsBuildInfo proves the install story: `go install
// ./cmd/...` from a git checkout of this module into an empty GOBIN gives
// peerctl and peerctl-mcp, whose `version --json` carries the module path
// and the checkout's commit, and notices local changes.
func TestInstallStampsBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module twice")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git to make a checkout")
	}
	root := moduleRoot(t)
	src := filepath.Join(t.TempDir(), "peerctl")
	copyModule(t, root, src)
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = src
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	head := git("rev-parse", "HEAD")
	commitTime := git("show", "-s", "--format=%cI", "HEAD")

	gobin := t.TempDir()
	install := func() versionJSON {
		cmd := exec.Command("go", "install", "./cmd/...")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-buildvcs=true")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go install: %s", out)
		var vs []versionJSON
		for _, prog := range []string{"peerctl", "peerctl-mcp"} {
			out, err = exec.Command(filepath.Join(gobin, prog), "version", "--json").Output()
			require.NoError(t, err, prog)
			var v versionJSON
			require.NoError(t, json.Unmarshal(out, &v), string(out))
			vs = append(vs, v)
		}
		assert.Equal(t, vs[0], vs[1], "peerctl and peerctl-mcp are one build")
		return vs[0]
	}
	v := install()
	assert.Equal(t, "github.com/peerctl/peerctl", v.Module)
	assert.Equal(t, head, v.Revision)
	want, err := time.Parse(time.RFC3339, commitTime)
	require.NoError(t, err)
	got, err := time.Parse(time.RFC3339, v.Time)
	require.NoError(t, err, "vcs.time %q", v.Time)
	assert.True(t, want.Equal(got), "commit time %s, binary says %s", commitTime, v.Time)
	assert.False(t, v.Modified)
	assert.NotEmpty(t, v.Version)

	require.NoError(t, os.WriteFile(filepath.Join(src, "cmd", "peerctl", "zz_local_change.go"), []byte("package main\n"), 0o644))
	v = install()
	assert.Equal(t, head, v.Revision)
	assert.True(t, v.Modified, "a local change is reported")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	gomod := strings.TrimSpace(string(out))
	require.NotEmpty(t, gomod)
	return filepath.Dir(gomod)
}

// copyModule copies what the module builds from, from root to dst: go.mod,
// go.sum and every regular file of its folders, so the files a package
// embeds too (no VCS metadata, no test data, no hidden folder, not the
// build's outputs bin/, dist/ and build/, no other file of the top).
func copyModule(t *testing.T, root, dst string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") || rel == "bin" || rel == "dist" || rel == "build" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		top := !strings.ContainsRune(rel, filepath.Separator)
		if !d.Type().IsRegular() || top && rel != "go.mod" && rel != "go.sum" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	require.NoError(t, err)
}

// TestGoInstallAtLatest proves `go install github.com/peerctl/peerctl/cmd/...@latest`
// works from the module path: this module is published as v0.0.1-test.<n> to a
// file:// module proxy in a temp dir (dependencies come from the local module
// cache, so no network is needed), installed with @latest into an empty
// GOBIN, and both programs' `version` reports the module and that version.
func TestGoInstallAtLatest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module")
	}
	// A version of its own each run: the shared module cache keeps what an
	// earlier run published (another tree) under a version it has seen.
	const mod = "github.com/peerctl/peerctl"
	ver := fmt.Sprintf("v0.0.1-test.%d", time.Now().UnixNano())
	root := moduleRoot(t)
	src := filepath.Join(t.TempDir(), "src")
	copyModule(t, root, src)

	proxy := t.TempDir()
	vdir := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	require.NoError(t, os.MkdirAll(vdir, 0o755))
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(gomod), "module "+mod+"\n"), "go.mod declares the module path users install")
	require.NoError(t, os.WriteFile(filepath.Join(vdir, "list"), []byte(ver+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vdir, ver+".info"), []byte(`{"Version":"`+ver+`","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vdir, ver+".mod"), gomod, 0o644))
	writeModuleZip(t, filepath.Join(vdir, ver+".zip"), src, mod+"@"+ver)

	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	modcache := strings.TrimSpace(string(cache))
	t.Cleanup(func() { forgetModule(modcache, mod, ver) })
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", mod+"/cmd/...@latest")
	cmd.Dir = t.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "GOSUMDB=off", "GOWORK=off",
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(modcache, "cache", "download"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go install @latest: %s", out)

	for _, prog := range []string{"peerctl", "peerctl-mcp"} {
		out, err = exec.Command(filepath.Join(gobin, prog), "version", "--json").Output()
		require.NoError(t, err, prog)
		var v versionJSON
		require.NoError(t, json.Unmarshal(out, &v), string(out))
		assert.Equal(t, mod, v.Module, prog)
		assert.Equal(t, ver, v.Version, prog)
	}
}

// forgetModule removes version ver of module mod from the module cache
// (extracted files are read-only there).
func forgetModule(modcache, mod, ver string) {
	dir := filepath.Join(modcache, filepath.FromSlash(mod)+"@"+ver)
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
	dl, _ := filepath.Glob(filepath.Join(modcache, "cache", "download", filepath.FromSlash(mod), "@v", ver+".*"))
	for _, f := range dl {
		_ = os.Remove(f)
	}
}

// writeModuleZip writes a module zip (every file under prefix/) of src.
func writeModuleZip(t *testing.T, dst, src, prefix string) {
	t.Helper()
	f, err := os.Create(dst)
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		w, err := zw.Create(prefix + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
}

// TestVersionTextWithoutVCS: a binary built with -buildvcs=false has no
// vcs.* settings; the text says the build carried none (not that a
// revision is "unknown", nor "-"), and says "modified: false" as version
// --json does, whose fields stay (revision and time "").
func TestVersionTextWithoutVCS(t *testing.T) {
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     []string
	}{
		{"no vcs settings", nil, []string{"revision: none: this build carried no VCS information (go build -buildvcs=false, or outside a git checkout)\n",
			"time:     none (no revision)\n", "modified: false\n"}},
		{"vcs settings", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "false"}},
			[]string{"revision: 0123456789abcdef\n", "time:     2026-01-02T03:04:05Z\n", "modified: false\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/peerctl/peerctl", Version: "(devel)"}, Settings: tt.settings}
			r := evRun(t, nil, func(c *factory) { c.buildInfo = func() (*debug.BuildInfo, bool) { return info, true } }, "version")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			for _, w := range tt.want {
				assert.Contains(t, r.stdout, w)
			}
			assert.NotContains(t, r.stdout, ": -\n")
			assert.NotContains(t, r.stdout, "unknown")
			r = evRun(t, nil, func(c *factory) { c.buildInfo = func() (*debug.BuildInfo, bool) { return info, true } }, "version", "--json")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
			assert.Contains(t, v, "revision")
			assert.Contains(t, v, "time")
		})
	}
}
