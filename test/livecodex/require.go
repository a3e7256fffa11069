//go:build unix

package livecodex

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

var release = livecc.Release{Harness: "Codex", Needs: "tmux and the Codex CLI from make deps", Programs: []string{"tmux"}, Find: find}

// find returns the codex program of version from the cache. The live
// tests run offline and install nothing: its error says how to install it.
func find(version string) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin, err := FindBinary(filepath.Join(dir, version))
	if err != nil {
		return "", fmt.Errorf("%w; run `make deps` or `go run ./test/livecodex/cmd/install-codex`", err)
	}
	return bin, nil
}

// Require gates a live Codex test (livecc.Release.Require: skipped without
// PEERCTL_LIVE=1; with it, failed when tmux is missing, when the run claims
// to be offline and is not, or when Codex Version() is not in the cache).
// It returns the codex program of Version().
func Require(t testing.TB) string {
	t.Helper()
	return release.Require(t, Version())
}
