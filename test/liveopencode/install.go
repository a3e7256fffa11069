//go:build unix

package liveopencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/peerctl/peerctl/test/livecc"
)

// DefaultVersion is the opencode release the live tests pin;
// PEERCTL_OPENCODE_VERSION overrides it.
const DefaultVersion = "1.18.33"

// Version is $PEERCTL_OPENCODE_VERSION, else DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv("PEERCTL_OPENCODE_VERSION")); v != "" {
		return v
	}
	return DefaultVersion
}

// CacheDir is livecc.CacheRoot("opencode"); each release is an npm prefix
// in CacheDir()/<version>.
func CacheDir() (string, error) { return livecc.CacheRoot("opencode") }

// FindBinary returns the native opencode program in an npm prefix dir: the
// platform package's binary, node_modules/opencode-<os>-<arch>/bin/opencode
// (opencode-ai 1.18.33). The JavaScript launcher in node_modules/.bin only
// finds and runs it.
func FindBinary(dir string) (string, error) {
	matches, _ := filepath.Glob(filepath.Join(dir, "node_modules", "opencode-*", "bin", "opencode"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return m, nil
		}
	}
	return "", fmt.Errorf("no native opencode binary in %s", dir)
}

// Install makes sure opencode-ai@<version> is installed in
// CacheDir()/<version> and returns its native opencode program
// (livecc.NPMInstall: temp folder renamed into place, under an flock).
func Install(version string) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return livecc.NPMInstall(cache, "opencode-ai", version, FindBinary)
}
