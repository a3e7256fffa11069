//go:build unix

package livecodex

import (
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

var release = livecc.Release{Harness: "Codex", Needs: "tmux and the Codex CLI from make deps", Programs: []string{"tmux"},
	Find: livecc.FromCache("codex", "go run ./test/livecodex/cmd/install-codex", FindBinary)}

// Require gates a live Codex test (livecc.Release.Require: skipped without
// PEERCTL_LIVE=1; with it, failed when tmux is missing, when the run claims
// to be offline and is not, or when Codex Version() is not in the cache).
// It returns the codex program of Version().
func Require(t testing.TB) string {
	t.Helper()
	return release.Require(t, Version())
}
