//go:build unix

package liveqwen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

var qwenCode = livecc.Release{Harness: "Qwen Code", Needs: "tmux, node, npm and the npm registry", Programs: []string{"tmux", "node"}, Find: Install}

// Require gates a live Qwen Code test (livecc.Release.Require: skipped
// without PEERCTL_LIVE=1, failed with it when tmux, node or the install is
// missing) and returns the qwen program of version.
func Require(t testing.TB, version string) string {
	t.Helper()
	return qwenCode.Require(t, version)
}
