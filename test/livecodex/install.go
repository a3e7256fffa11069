//go:build unix

package livecodex

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/peerctl/peerctl/test/livecc"
)

// DefaultVersion is the Codex CLI release the live tests pin;
// PEERCTL_CODEX_VERSION overrides it.
const DefaultVersion = "0.171.0"

// Version is $PEERCTL_CODEX_VERSION, else DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv("PEERCTL_CODEX_VERSION")); v != "" {
		return v
	}
	return DefaultVersion
}

// CacheDir is livecc.CacheRoot("codex"); each release is an npm prefix in
// CacheDir()/<version>.
func CacheDir() (string, error) { return livecc.CacheRoot("codex") }

// FindBinary returns the native codex program in an npm prefix dir: the
// platform package's binary, node_modules/@openai/codex-<os>-<arch>/vendor/
// <target triple>/bin/codex (0.171.0 ships a static musl build for Linux).
// The JavaScript launcher in node_modules/.bin is not used: it only finds
// and runs this binary, one node start later.
func FindBinary(dir string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return m, nil
		}
	}
	return "", fmt.Errorf("no native codex binary in %s", dir)
}

// Install makes sure @openai/codex@<version> is installed in
// CacheDir()/<version> and returns its native codex program
// (livecc.NPMInstall: temp folder renamed into place, under an flock).
func Install(version string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return livecc.NPMInstall(cache, "@openai/codex", version, FindBinary)
}
