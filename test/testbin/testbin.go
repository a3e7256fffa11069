// Package testbin builds the module's programs (peerctl, the fake claude)
// once per test process, for tests that run them as real processes.
//
// Call Cleanup from TestMain after m.Run to remove the build folder:
//
//	func TestMain(m *testing.M) { code := m.Run(); testbin.Cleanup(); os.Exit(code) }
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"sync"
	"testing"
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

// Cleanup removes the build folder. Call it once, after every test ran.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	dir, built = "", map[string]string{}
}
