//go:build unix

package liveqwen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

// DefaultVersion is the Qwen Code release the live tests pin;
// PEERCTL_QWEN_VERSION overrides it.
const DefaultVersion = "0.24.4"

// MessagingOffVersion is the release whose cross-session messaging is off
// by default (it writes a record without ipcPath).
const MessagingOffVersion = "0.23.0"

// Version is $PEERCTL_QWEN_VERSION, else DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv("PEERCTL_QWEN_VERSION")); v != "" {
		return v
	}
	return DefaultVersion
}

// Enabled reports whether live tests should run: PEERCTL_LIVE=1.
func Enabled() bool { return os.Getenv("PEERCTL_LIVE") == "1" }

// CacheDir is livecc.CacheRoot("qwen-code"); each release is an npm prefix
// in CacheDir()/<version>.
func CacheDir() (string, error) { return livecc.CacheRoot("qwen-code") }

// FindCLI returns the qwen program (a JavaScript file run with node) in an
// npm prefix dir.
func FindCLI(dir string) (string, error) {
	bin := filepath.Join(dir, "node_modules", ".bin", "qwen")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no qwen code install in %s: %w", dir, err)
	}
	return bin, nil
}

// Install makes sure @qwen-code/qwen-code@<version> is installed in
// CacheDir()/<version> and returns its qwen program (livecc.NPMInstall:
// temp folder renamed into place, under an flock).
func Install(version string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return livecc.NPMInstall(cache, "@qwen-code/qwen-code", version, FindCLI)
}

var installs sync.Map // version -> *installResult

type installResult struct {
	once sync.Once
	bin  string
	err  error
}

// Require gates a live test: without PEERCTL_LIVE=1 it skips; with it, a
// missing tmux or node, or a failed install, fails the test (CI must not
// go green by skipping), and so does a claim to run offline that is not
// true (livecc.RequireOffline). It returns the qwen program of version.
func Require(t testing.TB, version string) string {
	t.Helper()
	if !Enabled() {
		t.Skip("live Qwen Code test: set PEERCTL_LIVE=1 to run it (needs tmux, node, npm and the npm registry)")
	}
	for _, p := range []string{"tmux", "node"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("PEERCTL_LIVE=1 but %s is missing: %v", p, err)
		}
	}
	livecc.RequireOffline(t)
	v, _ := installs.LoadOrStore(version, &installResult{})
	r := v.(*installResult)
	r.once.Do(func() { r.bin, r.err = Install(version) })
	if r.err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but Qwen Code %s is not available: %v", version, r.err)
	}
	return r.bin
}
