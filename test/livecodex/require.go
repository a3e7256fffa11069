//go:build unix

package livecodex

import (
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/peerctl/peerctl/test/livecc"
)

// Enabled reports whether live tests should run: PEERCTL_LIVE=1.
func Enabled() bool { return os.Getenv("PEERCTL_LIVE") == "1" }

var installed struct {
	once sync.Once
	bin  string
	err  error
}

// Require gates a live Codex test. Without PEERCTL_LIVE=1 it skips. With
// it, a missing tmux fails the test, and so does a claim to run offline
// that is not true (livecc.RequireOffline); a Codex release that is not in
// the cache skips it, saying how to install it (the tests run offline and
// install nothing: `make deps` or `go run ./test/livecodex/cmd/install-codex`).
// It returns the codex program of Version().
func Require(t testing.TB) string {
	t.Helper()
	if !Enabled() {
		t.Skip("live Codex test: set PEERCTL_LIVE=1 to run it (needs tmux and the Codex CLI from make deps)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but tmux is missing: %v", err)
	}
	livecc.RequireOffline(t)
	installed.once.Do(func() {
		dir, err := CacheDir()
		if err != nil {
			installed.err = err
			return
		}
		installed.bin, installed.err = FindBinary(dir + "/" + Version())
	})
	if installed.err != nil {
		t.Skipf("live Codex test: Codex %s is not installed (%v); run `make deps` or `go run ./test/livecodex/cmd/install-codex`", Version(), installed.err)
	}
	return installed.bin
}
