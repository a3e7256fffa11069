//go:build unix

package liveopencode

import (
	"os"
	"os/exec"
	"path/filepath"
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

// Require gates a live opencode test. Without PEERCTL_LIVE=1 it skips.
// With it, a missing tmux fails the test, and so does a claim to run
// offline that is not true (livecc.RequireOffline); an opencode release
// that is not in the cache skips it, saying how to install it (the tests
// run offline and install nothing: `make deps` or `go run
// ./test/liveopencode/cmd/install-opencode`). It returns the opencode
// program of Version().
func Require(t testing.TB) string {
	t.Helper()
	if !Enabled() {
		t.Skip("live opencode test: set PEERCTL_LIVE=1 to run it (needs tmux and opencode from make deps)")
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
		installed.bin, installed.err = FindBinary(filepath.Join(dir, Version()))
	})
	if installed.err != nil {
		t.Skipf("live opencode test: opencode %s is not installed (%v); run `make deps` or `go run ./test/liveopencode/cmd/install-opencode`", Version(), installed.err)
	}
	return installed.bin
}
