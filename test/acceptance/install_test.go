//go:build unix

package acceptance

// install.sh against release archives served on 127.0.0.1: the archives of
// `make release` when PEERCTL_DIST names its dist/ folder
// (scripts/check-release.sh sets it), else one archive for this platform
// made here in the same layout from the test-built programs. Every failure
// exits non-zero with a clear message and leaves the install folder as it
// was.

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
)

// releaseDist is a folder of release archives and their checksums.txt, and
// the version their programs report (empty: not known beforehand).
type releaseDist struct {
	dir     string
	version string
}

func testDist(t *testing.T) releaseDist {
	if dir := os.Getenv("PEERCTL_DIST"); dir != "" {
		raw, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
		require.NoError(t, err, "PEERCTL_DIST=%s: not a dist/ of make release", dir)
		var meta struct{ Version string }
		require.NoError(t, json.Unmarshal(raw, &meta))
		return releaseDist{dir: dir, version: "v" + meta.Version}
	}
	dir := t.TempDir()
	name := fmt.Sprintf("peerctl_0.0.0-test_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(t, err)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, pkg := range []string{testbin.Peerctl, testbin.PeerctlMCP} {
		b, err := os.ReadFile(testbin.Build(t, pkg))
		require.NoError(t, err)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: filepath.Base(pkg), Mode: 0o755, Size: int64(len(b))}))
		_, err = tw.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, f.Close())
	writeChecksums(t, dir, name)
	return releaseDist{dir: dir}
}

// writeChecksums writes dir/checksums.txt for the named files, as goreleaser does.
func writeChecksums(t *testing.T, dir string, names ...string) {
	var sums strings.Builder
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		sum := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644))
}

// platformArchive is the name of dist's archive for goos/goarch.
func platformArchive(t *testing.T, dist string, goos, goarch string) string {
	m, err := filepath.Glob(filepath.Join(dist, fmt.Sprintf("peerctl_*_%s_%s.tar.gz", goos, goarch)))
	require.NoError(t, err)
	require.Len(t, m, 1, "the %s/%s archive in %s", goos, goarch, dist)
	return filepath.Base(m[0])
}

func TestInstallScript(t *testing.T) {
	installSh, err := filepath.Abs(filepath.Join("..", "..", "install.sh"))
	require.NoError(t, err)
	dist := testDist(t)
	archive := platformArchive(t, dist.dir, runtime.GOOS, runtime.GOARCH)
	original, err := os.ReadFile(filepath.Join(dist.dir, archive))
	require.NoError(t, err)
	sums, err := os.ReadFile(filepath.Join(dist.dir, "checksums.txt"))
	require.NoError(t, err)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())

	tests := []struct {
		name string
		// serve changes the served copy of the archive and checksums.txt.
		serve func(archive, sums []byte) ([]byte, []byte)
		env   []string // PEERCTL_DOWNLOAD_URL=<server> unless set here (<served>: the served folder)
		// dest is the install folder (default: a fresh one under the test's).
		dest    func(t *testing.T) string
		wantErr string // "" for a good install
	}{
		{name: "good"},
		{name: "tampered archive", wantErr: "does not match checksums.txt",
			serve: func(a, s []byte) ([]byte, []byte) {
				a = append([]byte(nil), a...)
				a[len(a)/2] ^= 0xff
				return a, s
			}},
		{name: "missing checksum line", wantErr: "lists no archive for " + runtime.GOOS + "/" + runtime.GOARCH,
			serve: func(a, s []byte) ([]byte, []byte) {
				var keep []string
				for _, l := range strings.SplitAfter(string(s), "\n") {
					if !strings.Contains(l, "_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz") {
						keep = append(keep, l)
					}
				}
				return a, []byte(strings.Join(keep, ""))
			}},
		{name: "wrong URL", env: []string{"PEERCTL_DOWNLOAD_URL=<server>/no/such/release"}, wantErr: "cannot download <server>/no/such/release/checksums.txt"},
		// A folder on this machine (a local dist/) is taken as it is, not as a URL.
		{name: "local folder", env: []string{"PEERCTL_DOWNLOAD_URL=<served>"}},
		{name: "local folder with a slash", env: []string{"PEERCTL_DOWNLOAD_URL=<served>/"}},
		{name: "folder without a release", env: []string{"PEERCTL_DOWNLOAD_URL=<served>/.."}, wantErr: "no checksums.txt in <served>/.. (make release puts one in dist/)"},
		{name: "no such folder", env: []string{"PEERCTL_DOWNLOAD_URL=<served>/none"}, wantErr: "PEERCTL_DOWNLOAD_URL=<served>/none is neither a URL nor a folder"},
		{name: "no network", env: []string{"PEERCTL_DOWNLOAD_URL=" + closedURL}, wantErr: "cannot download " + closedURL + "/checksums.txt"},
		{name: "unknown OS", env: []string{"PEERCTL_OS=Plan9"}, wantErr: `no peerctl release for the operating system "Plan9"`},
		{name: "unknown arch", env: []string{"PEERCTL_ARCH=riscv64"}, wantErr: `no peerctl release for the architecture "riscv64"`},
		{name: "install folder under a file", wantErr: "cannot create the install folder",
			dest: func(t *testing.T) string {
				file := filepath.Join(t.TempDir(), "file")
				require.NoError(t, os.WriteFile(file, nil, 0o644))
				return filepath.Join(file, "bin")
			}},
		{name: "unwritable install folder", wantErr: "cannot write into",
			dest: func(t *testing.T) string {
				if os.Geteuid() == 0 {
					// root writes through any mode bits; /proc's own folder
					// takes no new files.
					if runtime.GOOS != "linux" {
						t.Skip("as root, needs Linux's /proc for a folder root cannot write")
					}
					return "/proc/self"
				}
				dir := t.TempDir()
				require.NoError(t, os.Chmod(dir, 0o555))
				return dir
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served := t.TempDir()
			a, s := original, sums
			if tt.serve != nil {
				a, s = tt.serve(a, s)
			}
			require.NoError(t, os.WriteFile(filepath.Join(served, archive), a, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(served, "checksums.txt"), s, 0o644))
			srv := httptest.NewServer(http.FileServer(http.Dir(served)))
			defer srv.Close()

			dest := filepath.Join(t.TempDir(), "home", ".local", "bin")
			if tt.dest != nil {
				dest = tt.dest(t)
			}
			// An older install stays as it was when the new one fails.
			if tt.dest == nil {
				require.NoError(t, os.MkdirAll(dest, 0o755))
				for _, p := range []string{"peerctl", "peerctl-mcp"} {
					require.NoError(t, os.WriteFile(filepath.Join(dest, p), []byte("old "+p), 0o755))
				}
			}
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
				"PEERCTL_DOWNLOAD_URL=" + srv.URL, "PEERCTL_INSTALL_DIR=" + dest}
			for _, kv := range tt.env {
				env = append(env, strings.NewReplacer("<server>", srv.URL, "<served>", served).Replace(kv))
			}
			r := runPeerctl(t, runOpts{Bin: "/bin/sh", Env: env}, installSh)
			stderr := string(r.Stderr)

			if tt.wantErr != "" {
				assert.NotEqual(t, 0, r.Code, stderr)
				assert.Contains(t, stderr, strings.NewReplacer("<server>", srv.URL, "<served>", served).Replace(tt.wantErr))
				assert.Contains(t, stderr, "nothing was installed")
				if tt.dest == nil {
					entries, err := os.ReadDir(dest)
					require.NoError(t, err)
					assert.Len(t, entries, 2, "only the older install is there")
					for _, p := range []string{"peerctl", "peerctl-mcp"} {
						b, err := os.ReadFile(filepath.Join(dest, p))
						require.NoError(t, err)
						assert.Equal(t, "old "+p, string(b))
					}
				}
				return
			}
			require.Equal(t, 0, r.Code, stderr)
			assert.Contains(t, stderr, "installed peerctl and peerctl-mcp from "+archive+" into "+dest)
			assert.Contains(t, stderr, dest+" is not on your PATH")
			entries, err := os.ReadDir(dest)
			require.NoError(t, err)
			assert.Len(t, entries, 2, "peerctl and peerctl-mcp, no leftovers")
			for _, p := range []string{"peerctl", "peerctl-mcp"} {
				v := runPeerctl(t, runOpts{Bin: filepath.Join(dest, p)}, "version", "--json")
				require.Equal(t, 0, v.Code, "%s version --json: %s", p, v.Stderr)
				var got struct{ Version string }
				require.NoError(t, json.Unmarshal(v.Stdout, &got))
				if dist.version != "" {
					assert.Equal(t, dist.version, got.Version, p)
				}
			}
		})
	}
}
