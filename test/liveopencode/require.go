//go:build unix

package liveopencode

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

var release = livecc.Release{Harness: "opencode", Needs: "tmux and opencode from make deps", Programs: []string{"tmux"}, Find: find}

// find returns the opencode program of version from the cache. The live
// tests run offline and install nothing: its error says how to install it.
func find(version string) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin, err := FindBinary(filepath.Join(dir, version))
	if err != nil {
		return "", fmt.Errorf("%w; run `make deps` or `go run ./test/liveopencode/cmd/install-opencode`", err)
	}
	return bin, nil
}

// Require gates a live opencode test (livecc.Release.Require: skipped without
// PEERCTL_LIVE=1; with it, failed when tmux is missing, when the run claims
// to be offline and is not, or when opencode Version() is not in the cache).
// It returns the opencode program of Version().
func Require(t testing.TB) string {
	t.Helper()
	return release.Require(t, Version())
}
