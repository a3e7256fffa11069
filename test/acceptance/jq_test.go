//go:build unix

package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --jq's filter (gojq) is linked into peerctl-mcp only: peerctl runs a
// command line with --jq as the peerctl-mcp beside it, in its place, and
// the output, the exit codes and the errors are --jq's as before: a result
// a line, a string raw; a bad expression a usage error naming it (exit 2);
// an expression that fails on the output exit 1; a refusal's document
// filtered with the refusal's exit code. Without a peerctl-mcp it exits 1
// saying how to get one, and prints nothing; -o json needs none.
func TestJQRunsAsPeerctlMCP(t *testing.T) {
	reg := craftRegistry(t)
	env := regEnv(t, reg.ConfigDir)
	res := runPeerctl(t, runOpts{Env: env}, "list", "--all", "--json")
	require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	var listed []struct{ SessionID string }
	require.NoError(t, json.Unmarshal(res.Stdout, &listed))
	var ids []string
	for _, l := range listed {
		ids = append(ids, l.SessionID+"\n")
	}
	require.NotEmpty(t, ids)

	res = runPeerctl(t, runOpts{Env: env}, "list", "--all", "--jq", ".[].sessionId")
	assert.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	assert.Equal(t, strings.Join(ids, ""), string(res.Stdout))
	res = runPeerctl(t, runOpts{Env: env}, "list", "-q", "length, {n: length}")
	assert.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	assert.Regexp(t, `^\d+\n\{"n":\d+\}\n$`, string(res.Stdout))

	res = runPeerctl(t, runOpts{Env: env}, "list", "--jq", ".[")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, string(res.Stderr), `peerctl: --jq ".[": `)
	assert.Contains(t, string(res.Stderr), "Run 'peerctl list --help' for usage.")
	assert.Empty(t, res.Stdout)
	res = runPeerctl(t, runOpts{Env: env}, "list", "--jq", "1, .foo")
	assert.Equal(t, 1, res.Code)
	assert.Contains(t, string(res.Stderr), "peerctl: --jq: ")
	assert.Equal(t, "1\n", string(res.Stdout))
	// halt_error: its string raw on stderr, its code; env is the environment.
	res = runPeerctl(t, runOpts{Env: env}, "list", "--jq", `"bye\n" | halt_error(6)`)
	assert.Equal(t, 6, res.Code)
	assert.Equal(t, "bye\n", string(res.Stderr))
	res = runPeerctl(t, runOpts{Env: append(env, "PEERCTL_JQ_SEEN=yes")}, "list", "--jq", "env.PEERCTL_JQ_SEEN")
	assert.Equal(t, "yes\n", string(res.Stdout), "stderr: %s", res.Stderr)
	res = runPeerctl(t, runOpts{Env: env}, "show", "--jq", ".refusal.reason", "no-such-session")
	assert.Equal(t, 3, res.Code, "stderr: %s", res.Stderr)
	assert.Empty(t, res.Stdout, "as gh, --jq is not run on a refusal")
	assert.Contains(t, string(res.Stderr), "peerctl: not_live: ")

	b, err := os.ReadFile(peerctlBin(t))
	require.NoError(t, err)
	alone := filepath.Join(t.TempDir(), "peerctl")
	require.NoError(t, os.WriteFile(alone, b, 0o755))
	bare := append([]string{"PATH=" + t.TempDir()}, env[1:]...)
	for _, args := range [][]string{{"list", "--jq", ".[].sessionId"}, {"list", "--jq", ".["}, {"version", "-q", ".module"}} {
		res = runPeerctl(t, runOpts{Bin: alone, Env: bare}, args...)
		assert.Equal(t, 1, res.Code, "%q: stderr %s", args, res.Stderr)
		assert.Contains(t, string(res.Stderr), "peerctl: --jq runs peerctl-mcp", "%q", args)
		assert.Contains(t, string(res.Stderr), "make build", "%q", args)
		assert.Empty(t, res.Stdout, "%q", args)
	}
	res = runPeerctl(t, runOpts{Bin: alone, Env: bare}, "list", "--all", "-o", "json")
	assert.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	assert.True(t, json.Valid(res.Stdout), "%s", res.Stdout)
}

// TestJQEndsOnSIGINT: Ctrl-C ends an expression that never ends (the
// filter runs on the command's context), once its first result is out.
func TestJQEndsOnSIGINT(t *testing.T) {
	reg := craftRegistry(t)
	// version catches signals (list, reading this machine alone, does not:
	// a signal ends it as any program).
	cmd := exec.Command(peerctlBin(t), "version", "--jq", "1, (def f: f; f)")
	cmd.Env = regEnv(t, reg.ConfigDir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "1\n", line)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 1, exitWithin(t, cmd, "--jq after SIGINT"))
}

// exitWithin is the exit code of cmd, started, once it ends; the test
// fails if it has not ended within bound (what says what should have).
func exitWithin(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &ee)
			return ee.ExitCode()
		}
		return 0
	case <-time.After(bound):
		t.Fatalf("%s did not end within %s", what, bound)
		return -1
	}
}
