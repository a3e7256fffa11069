//go:build unix

package acceptance

// The courier against real Claude Code (PEERCTL_LIVE=1): its argv is one
// the real `claude --help` defines, a run without a login ends in
// delivery_failed with Claude's own words, and a run that hangs (a fake key,
// no network) is ended on time with nothing left behind.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/test/livecc"

	"github.com/peerctl/peerctl/test/socktest"
)

// liveCourierWorld is a registry with one addressable live record (our own
// process) and an environment with no login: isolated HOME and config dir,
// no ANTHROPIC_* or CLAUDE_CODE_* from the caller.
type liveCourierWorld struct {
	claude string
	config string
	id     string
	env    []string
}

func newLiveCourierWorld(t *testing.T, extra ...string) liveCourierWorld {
	t.Helper()
	claude := livecc.Require(t, livecc.Version())
	config, sessions := catRegistry(t)
	sock := filepath.Join(catSocketDir(t), "live.sock")
	socktest.Listen(t, sock, false)
	rec := catRecord(t, os.Getpid(), "live-target", sock)
	catWriteJSON(t, sessions, catFile(os.Getpid()), rec)
	env := append(livecc.Scrub(os.Environ()), "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="+config,
		"DISABLE_AUTOUPDATER=1", "PEERCTL_CLAUDE="+claude)
	return liveCourierWorld{claude: claude, config: config, id: rec["sessionId"].(string), env: append(env, extra...)}
}

func TestLiveCourierArgvIsAcceptedByClaude(t *testing.T) {
	w := newLiveCourierWorld(t)
	r := runPeerctl(t, runOpts{Env: w.env}, "send", "--dry-run", "--json", w.id, "hello")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var got struct {
		Plan struct{ Argv []string } `json:"plan"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	require.NotEmpty(t, got.Plan.Argv)
	assert.Equal(t, w.claude, got.Plan.Argv[0])

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.claude, "--help")
	cmd.Env = w.env
	help, err := cmd.Output()
	require.NoError(t, err, "claude --help")
	defined := courierexec.HelpFlags(help)
	require.True(t, defined["--print"] && defined["-p"], "the help parser found no -p/--print in:\n%s", help)
	flags := 0
	for _, a := range got.Plan.Argv[1:] {
		if strings.HasPrefix(a, "-") {
			flags++
			assert.True(t, defined[a], "%s is not a flag of claude %s --help", a, livecc.Version())
		}
	}
	assert.Equal(t, 9, flags, "argv: %q", got.Plan.Argv)
}

func TestLiveCourierNotLoggedIn(t *testing.T) {
	w := newLiveCourierWorld(t)
	r := runPeerctl(t, runOpts{Env: w.env, Timeout: 120 * time.Second}, "send", "--json", "--timeout", "60s", w.id, "hello from peerctl")
	assert.Equal(t, 5, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	body := assertRefusalJSON(t, r, "delivery_failed", 5)
	assert.Contains(t, body.Detail, "Not logged in")
	requireNoCourierLeft(t, w.config)
}

func TestLiveCourierTimeoutLeavesNothing(t *testing.T) {
	// A key that looks real enough to try: with no network the courier
	// retries and hangs (FACTS: past two minutes), so only the timeout ends it.
	w := newLiveCourierWorld(t, "ANTHROPIC_API_KEY=sk-ant-api03-"+strings.Repeat("x", 80))
	r := runPeerctl(t, runOpts{Env: w.env, Timeout: 60 * time.Second}, "send", "--json", "--timeout", "3s", w.id, "hello from peerctl")
	assert.Equal(t, 5, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	body := assertRefusalJSON(t, r, "delivery_failed", 5)
	assert.Contains(t, body.Detail, "timed out after 3s")
	// 3 s, then at most the 2 s TERM-to-KILL grace: a bound, not a speed claim.
	assert.LessOrEqual(t, r.Elapsed, 10*time.Second)
	requireNoCourierLeft(t, w.config)
}

// requireNoCourierLeft fails when a live (non-zombie) process still carries
// CLAUDE_CONFIG_DIR=config in its environment: the courier or anything it
// started (children inherit the environment; other tests' sessions have
// their own config dirs).
func requireNoCourierLeft(t *testing.T, config string) {
	t.Helper()
	mark := []byte("CLAUDE_CONFIG_DIR=" + config + "\x00")
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = left[:0]
		ents, err := os.ReadDir("/proc")
		require.NoError(t, err)
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(append(env, 0), mark) {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil || bytes.Contains(stat, []byte(") Z ")) {
				continue
			}
			exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
			left = append(left, e.Name()+" "+exe)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Empty(t, left, "courier processes outlived peerctl")
}
