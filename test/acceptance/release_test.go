//go:build unix

package acceptance

// The archives of `make release` (PEERCTL_DIST names its dist/ folder;
// scripts/check-release.sh builds it and runs this): one per platform with
// both programs, LICENSE, README.md and the man pages; checksums.txt
// matches them; every program is static, path-trimmed and stamped with the
// snapshot version, and the linux/amd64 peerctl from its archive reports it.

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReleaseArchives(t *testing.T) {
	distDir := os.Getenv("PEERCTL_DIST")
	if distDir == "" {
		t.Skip("checks the output of make release: scripts/check-release.sh runs it with PEERCTL_DIST")
	}
	raw, err := os.ReadFile(filepath.Join(distDir, "metadata.json"))
	require.NoError(t, err)
	var meta struct{ Version, Commit string }
	require.NoError(t, json.Unmarshal(raw, &meta))
	require.Contains(t, meta.Version, "SNAPSHOT", "make release builds a snapshot")
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err, "the checkout's commit")
	require.Equal(t, strings.TrimSpace(string(head)), meta.Commit, "the snapshot is of the checkout's commit")
	_, short, _ := strings.Cut(meta.Version, "SNAPSHOT-")
	require.True(t, len(short) >= 7 && strings.HasPrefix(meta.Commit, short), "version %s names the commit", meta.Version)

	sums := map[string]string{} // file name -> sha256
	f, err := os.Open(filepath.Join(distDir, "checksums.txt"))
	require.NoError(t, err)
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "checksums.txt line %q", sc.Text())
		sums[name] = sum
	}

	platforms := []struct{ goos, goarch, ext string }{
		{"linux", "amd64", ".tar.gz"}, {"linux", "arm64", ".tar.gz"},
		{"darwin", "amd64", ".tar.gz"}, {"darwin", "arm64", ".tar.gz"},
		{"windows", "amd64", ".zip"},
	}
	require.Len(t, sums, len(platforms), "checksums.txt lists the archives and nothing else: %v", sums)
	for _, p := range platforms {
		name := "peerctl_" + meta.Version + "_" + p.goos + "_" + p.goarch + p.ext
		t.Run(p.goos+"_"+p.goarch, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(distDir, name))
			require.NoError(t, err)
			sum := sha256.Sum256(b)
			assert.Equal(t, sums[name], hex.EncodeToString(sum[:]), "checksums.txt's line for %s", name)

			files := archiveFiles(t, b, p.ext)
			exe := ""
			if p.goos == "windows" {
				exe = ".exe"
			}
			for _, want := range []string{"LICENSE", "README.md", "man/man1/peerctl.1", "man/man1/peerctl-send.1", "peerctl" + exe, "peerctl-mcp" + exe} {
				assert.Contains(t, files, want, name)
			}
			for _, prog := range []string{"peerctl" + exe, "peerctl-mcp" + exe} {
				bi, err := buildinfo.Read(bytes.NewReader(files[prog]))
				require.NoError(t, err, "%s in %s", prog, name)
				settings := map[string]string{}
				for _, s := range bi.Settings {
					settings[s.Key] = s.Value
				}
				assert.Equal(t, "0", settings["CGO_ENABLED"], "%s in %s is static", prog, name)
				assert.Equal(t, "true", settings["-trimpath"], "%s in %s", prog, name)
				// -trimpath keeps -ldflags out of the build info, so the
				// stamp is looked for in the binary itself.
				assert.True(t, bytes.Contains(files[prog], []byte("v"+meta.Version)), "%s in %s is stamped v%s", prog, name, meta.Version)
				assert.Equal(t, p.goos, settings["GOOS"])
				assert.Equal(t, p.goarch, settings["GOARCH"])
			}
			if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
				dir := t.TempDir()
				for _, prog := range []string{"peerctl", "peerctl-mcp"} {
					require.NoError(t, os.WriteFile(filepath.Join(dir, prog), files[prog], 0o755))
					r := runPeerctl(t, runOpts{Bin: filepath.Join(dir, prog)}, "version", "--json")
					require.Equal(t, 0, r.Code, "%s version --json: %s", prog, r.Stderr)
					var v struct{ Version, OS, Arch string }
					require.NoError(t, json.Unmarshal(r.Stdout, &v))
					assert.Equal(t, "v"+meta.Version, v.Version, prog)
				}
			}
		})
	}

	cask, err := os.ReadFile(filepath.Join(distDir, "homebrew", "Casks", "peerctl.rb"))
	require.NoError(t, err, "the Homebrew cask")
	for _, prog := range []string{"peerctl", "peerctl-mcp"} {
		assert.Contains(t, string(cask), `binary "`+prog+`"`)
	}
	for name, sum := range sums {
		if strings.Contains(name, "_darwin_") || strings.Contains(name, "_linux_") {
			assert.Contains(t, string(cask), sum, "the cask pins %s", name)
		}
	}
}

// archiveFiles returns the regular files of a .tar.gz or .zip archive by name.
func archiveFiles(t *testing.T, b []byte, ext string) map[string][]byte {
	files := map[string][]byte{}
	if ext == ".zip" {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		require.NoError(t, err)
		for _, f := range zr.File {
			rc, err := f.Open()
			require.NoError(t, err)
			files[f.Name], err = io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
		}
		return files
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			files[h.Name], err = io.ReadAll(tr)
			require.NoError(t, err)
		}
	}
}
