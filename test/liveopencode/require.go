//go:build unix

package liveopencode

import (
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

var release = livecc.Release{Harness: "opencode", Needs: "tmux and opencode from make deps", Programs: []string{"tmux"},
	Find: livecc.FromCache("opencode", "go run ./test/liveopencode/cmd/install-opencode", FindBinary)}

// Require gates a live opencode test (livecc.Release.Require: skipped without
// PEERCTL_LIVE=1; with it, failed when tmux is missing, when the run claims
// to be offline and is not, or when opencode Version() is not in the cache).
// It returns the opencode program of Version().
func Require(t testing.TB) string {
	t.Helper()
	return release.Require(t, Version())
}
