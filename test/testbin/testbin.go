// Package testbin builds the module's programs (peerctl, the fake claude)
// once per test process, for tests that run them as real processes.
//
// Call Cleanup from TestMain after m.Run to remove the build folder (and to
// fail the package when a test left a fake claude running):
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Cleanup(m.Run())) }
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

// Packages this module's tests build.
const (
	Peerctl    = "github.com/peerctl/peerctl/cmd/peerctl"
	PeerctlMCP = "github.com/peerctl/peerctl/cmd/peerctl-mcp"
	FakeClaude = "github.com/peerctl/peerctl/test/fakeclaude"
	FakeSSH    = "github.com/peerctl/peerctl/test/fakessh"
	TCPRelay   = "github.com/peerctl/peerctl/test/tcprelay"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// Build compiles the main package pkg (an import path of this module) into
// a folder shared by the test process and returns the executable's path.
// Later calls for the same pkg return the same path. A build failure fails tb.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	return BuildTagged(tb, pkg, "")
}

// BuildTagged is Build with the build tag tag ("" for none): a tagged
// build is kept apart from the untagged one, named after its tag
// (peerctl-peerctlfault). Only tests use tags (internal/serve's fault
// points).
func BuildTagged(tb testing.TB, pkg, tag string) string {
	tb.Helper()
	bin, err := build(pkg, tag)
	if err != nil {
		tb.Fatalf("build %s: %v", pkg, err)
	}
	return bin
}

func build(pkg, tag string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	key := pkg + " " + tag
	if bin, ok := built[key]; ok {
		return bin, nil
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "peerctl-testbin-")
		if err != nil {
			return "", fmt.Errorf("make build folder: %w", err)
		}
		dir = d
	}
	bin := path.Join(dir, path.Base(pkg))
	args := []string{"build", "-trimpath", "-o"}
	if tag != "" {
		bin += "-" + tag
		args = append(args, bin, "-tags", tag)
	} else {
		args = append(args, bin)
	}
	// Built as `make build` builds peerctl: static, without cgo.
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %s: %w", out, err)
	}
	built[key] = bin
	return bin, nil
}

// Cleanup removes the build folder; call it once, after every test ran,
// with m.Run's exit code. It returns that code, or 1 when a fake claude
// (FakeClaude, as built here) still ran leftWait after the tests ended: a
// test or the code under test left a courier behind, which nothing would
// ever end. Those are named on stderr and killed, with their process
// groups. (Linux: found by /proc/<pid>/exe; elsewhere nothing is looked for.)
func Cleanup(code int) int {
	mu.Lock()
	defer mu.Unlock()
	if bin, ok := built[FakeClaude+" "]; ok {
		if err := leftBehind(bin, leftWait); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	dir, built = "", map[string]string{}
	return code
}

// leftWait is how long Cleanup lets a fake claude take to end after the
// tests: a courier's group is ended by its guard once its owner is gone,
// within moments even on a busy machine.
const leftWait = 20 * time.Second

// leftBehind waits up to wait for every process running bin to end; it
// kills those still running and names them in its error.
func leftBehind(bin string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left := running(bin)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range left {
				fmt.Fprintf(&b, "\n  pid %d (parent %d; tests' folders: %s): %s", p.pid, p.ppid, p.tests, p.args)
				p.kill()
			}
			return fmt.Errorf("%d fake claude process(es) still ran %s after the tests ended (now killed):%s", len(left), wait, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
