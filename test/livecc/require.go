//go:build unix

package livecc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Enabled reports whether live tests should run: PEERCTL_LIVE=1.
func Enabled() bool { return os.Getenv("PEERCTL_LIVE") == "1" }

// Release is one harness's pinned release as the live tests find it. The
// zero value is not usable: give Harness (the name in messages, "Codex")
// and Find. A Release is safe for concurrent use.
type Release struct {
	// Harness names the harness in skip and fail messages.
	Harness string
	// Needs says what a live run needs, for the skip message without
	// PEERCTL_LIVE=1 ("tmux and the Codex CLI from make deps").
	Needs string
	// Programs must be on PATH with PEERCTL_LIVE=1 (tmux, node...).
	Programs []string
	// Find returns the program of version, installing it if it can;
	// its error says how to install it when it cannot.
	Find func(version string) (string, error)

	found sync.Map // version -> *found
}

type found struct {
	once sync.Once
	bin  string
	err  error
}

// Require gates a live test of r's harness. Without PEERCTL_LIVE=1 it
// skips the test. With it, it fails the test (never skips: CI must not go
// green by skipping) when a program of r.Programs is missing, when the
// run claims to be offline and is not (RequireOffline), or when Find
// fails for version. It returns the program Find gave; Find runs once per
// process and version.
func (r *Release) Require(t testing.TB, version string) string {
	t.Helper()
	if !Enabled() {
		t.Skipf("live %s test: set PEERCTL_LIVE=1 to run it (needs %s)", r.Harness, r.Needs)
	}
	for _, p := range r.Programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("PEERCTL_LIVE=1 but %s is missing: %v", p, err)
		}
	}
	RequireOffline(t)
	v, _ := r.found.LoadOrStore(version, &found{})
	f := v.(*found)
	f.once.Do(func() { f.bin, f.err = r.Find(version) })
	if f.err != nil {
		t.Fatalf("PEERCTL_LIVE=1 but %s %s is not available: %v", r.Harness, version, f.err)
	}
	return f.bin
}

var claudeCode = Release{Harness: "Claude Code", Needs: "tmux, npm and the npm registry", Programs: []string{"tmux"}, Find: Install}

// Require gates a live Claude Code test (Release.Require) and returns the
// claude program of version, installed once per process and version; see
// Install for the cache.
func Require(t testing.TB, version string) string {
	t.Helper()
	return claudeCode.Require(t, version)
}

// FromCache is a Release's Find for a release the live tests take from
// the cache only (they run offline and install nothing): the program
// findBinary finds in CacheRoot(cache)/<version>, or an error that says to
// run `make deps` or the install command.
func FromCache(cache, install string, findBinary func(dir string) (string, error)) func(version string) (string, error) {
	return func(version string) (string, error) {
		root, err := CacheRoot(cache)
		if err != nil {
			return "", err
		}
		bin, err := findBinary(filepath.Join(root, version))
		if err != nil {
			return "", fmt.Errorf("%w; run `make deps` or `%s`", err, install)
		}
		return bin, nil
	}
}
