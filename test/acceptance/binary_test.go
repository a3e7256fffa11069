// Package acceptance runs the built peerctl binary end to end: against temp
// registries, a fake claude and test Unix listeners (hermetic), and against
// real Claude Code (live, PEERCTL_LIVE=1).
package acceptance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
)

// stopShared stops what the tests share (the NATS cluster) once every
// test ran.
var stopShared []func()

// TestMain removes the binaries built by testbin once every test ran.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, stop := range stopShared {
		stop()
	}
	code = testbin.Cleanup(code)
	os.Exit(code)
}

// peerctlBin returns the peerctl binary, built once per test process,
// with peerctl-mcp built beside it, as make build writes them: peerctl
// runs serve, watch and the outbox commands (the outbox's store), `peerctl
// mcp` and the bus's commands as that peerctl-mcp.
func peerctlBin(t testing.TB) string {
	testbin.Build(t, testbin.PeerctlMCP)
	return testbin.Build(t, testbin.Peerctl)
}

// peerctlWithMCP is peerctlBin, named where a test needs peerctl-mcp.
func peerctlWithMCP(t testing.TB) string { return peerctlBin(t) }

// fakeClaudeBin returns the fake claude (test/fakeclaude), built once.
func fakeClaudeBin(t testing.TB) string { return testbin.Build(t, testbin.FakeClaude) }

// result is one finished peerctl run.
type result struct {
	Stdout, Stderr []byte
	Code           int
	Elapsed        time.Duration
}

// runOpts shape one peerctl run.
type runOpts struct {
	// Env is the whole environment (nil: a minimal one with PATH and HOME).
	Env []string
	// Stdin is fed to the process (nil: empty).
	Stdin []byte
	// Timeout bounds the run (0: 60 s), from the process's start (the
	// binary is built before: the first build in a test process takes
	// minutes on a busy machine); a run past it fails the test.
	Timeout time.Duration
	// Bin is the program to run (empty: peerctlBin).
	Bin string
}

// runPeerctl runs the peerctl binary with args and returns what it did.
func runPeerctl(t testing.TB, o runOpts, args ...string) result {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Env == nil {
		o.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	}
	if o.Bin == "" {
		o.Bin = peerctlBin(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.Bin, args...)
	cmd.Env = o.Env
	cmd.Stdin = bytes.NewReader(o.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.Code = ee.ExitCode()
	default:
		require.NoError(t, err, "peerctl %q ran %s of its %s bound\nstdout: %s\nstderr: %s", args, r.Elapsed.Round(time.Millisecond), o.Timeout, r.Stdout, r.Stderr)
	}
	return r
}
