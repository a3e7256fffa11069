//go:build unix

package livecc

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Enabled reports whether live Claude Code tests should run: PEERCTL_LIVE=1.
func Enabled() bool { return os.Getenv("PEERCTL_LIVE") == "1" }

type installResult struct {
	once sync.Once
	bin  string
	err  error
}

var installs sync.Map // version -> *installResult

// Require gates a live test. Without PEERCTL_LIVE=1 it skips the test. With it,
// it fails the test (never skips: CI must not go green by skipping) when tmux is
// missing or Claude Code <version> cannot be installed (npm missing, install
// error), or when it claims to run offline and is not (RequireOffline). It
// returns the claude program to run. The install runs once per
// process and version; see Install for the cache.
func Require(t testing.TB, version string) string {
	t.Helper()
	if !Enabled() {
		t.Skip("live Claude Code test: set PEERCTL_LIVE=1 to run it (needs tmux, npm and the npm registry)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but tmux is missing: %v", err)
	}
	RequireOffline(t)
	v, _ := installs.LoadOrStore(version, &installResult{})
	r := v.(*installResult)
	r.once.Do(func() { r.bin, r.err = Install(version) })
	if r.err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but Claude Code %s is not available: %v", version, r.err)
	}
	return r.bin
}
