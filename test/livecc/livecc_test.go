//go:build unix

package livecc_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/test/livecc"
)

// TestLiveSlug checks the product's rule, domain.ProjectSlug, against the
// folder real Claude Code writes the transcript into, for a non-ASCII cwd
// and for one past domain.MaxProjectSlug.
func TestLiveSlug(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	root := livecc.NewRoot(t)
	long := "long"
	for len(long) < 240 {
		long += "/seg_ment.x"
	}
	for i, cwd := range []string{"ünï cödé😀.x_y", long} {
		s := livecc.Start(t, bin, livecc.Options{Root: root, Label: "slug" + strconv.Itoa(i), Cwd: cwd, NoAPIKey: true, WaitSettled: true})
		_, err := livecc.Post(s.SocketPath, "slug probe", 30*time.Second)
		require.NoError(t, err)
		s.WaitTranscript(t, `"operation":"enqueue"`, 30*time.Second)
		matches, err := filepath.Glob(filepath.Join(s.ConfigDir, "projects", "*", s.SessionID+".jsonl"))
		require.NoError(t, err)
		require.Len(t, matches, 1)
		assert.Equal(t, domain.ProjectSlug(s.Cwd), filepath.Base(filepath.Dir(matches[0])), "cwd %q", s.Cwd)
		assert.Equal(t, s.TranscriptPath(), matches[0])
	}
}

func TestScrub(t *testing.T) {
	in := []string{"PATH=/bin", "CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CONFIG_DIR=/c",
		"ANTHROPIC_API_KEY=k", "TMUX=/t,1,0", "TMUX_PANE=%1", "XDG_RUNTIME_DIR=/run/user/0", "CLAUDEX=keep", "HOME=/h"}
	assert.Equal(t, []string{"PATH=/bin", "CLAUDEX=keep", "HOME=/h"}, livecc.Scrub(in))
}

func TestEnv(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_SSE_PORT", "1234")
	env := livecc.Env("/cfg", "X=1")
	assert.Contains(t, env, "CLAUDE_CONFIG_DIR=/cfg")
	assert.Equal(t, "X=1", env[len(env)-1])
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "CLAUDECODE=") || kv == "CLAUDE_CODE_SSE_PORT=1234", kv)
	}
	for _, kv := range livecc.OfflineEnv {
		assert.Contains(t, env, kv, "updates and telemetry off")
	}
}

func TestFindBinary(t *testing.T) {
	write := func(t *testing.T, path, body string, mode os.FileMode) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), mode))
	}
	t.Run("native platform package", func(t *testing.T) {
		arch := map[string]string{"amd64": "x64"}[runtime.GOARCH]
		if arch == "" {
			arch = runtime.GOARCH
		}
		dir := t.TempDir()
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/package.json"), `{"bin":{"claude":"bin/claude.exe"}}`, 0o644)
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/bin/claude.exe"), "stub", 0o755)
		bin := filepath.Join(dir, "node_modules/@anthropic-ai/claude-code-"+runtime.GOOS+"-"+arch+"/claude")
		write(t, bin, "\x7fELF", 0o755)
		got, err := livecc.FindBinary(dir)
		require.NoError(t, err)
		assert.Equal(t, bin, got)
	})
	t.Run("javascript cli", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/package.json"), `{"bin":{"claude":"cli.js"}}`, 0o644)
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/cli.js"), "#!/usr/bin/env node\n", 0o755)
		got, err := livecc.FindBinary(dir)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/cli.js"), got)
	})
	t.Run("wrapper stub without platform package", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/package.json"), `{"bin":{"claude":"bin/claude.exe"}}`, 0o644)
		write(t, filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/bin/claude.exe"), "stub", 0o755)
		_, err := livecc.FindBinary(dir)
		assert.Error(t, err)
	})
	t.Run("nothing", func(t *testing.T) {
		_, err := livecc.FindBinary(t.TempDir())
		assert.Error(t, err)
	})
}

func TestSeedConfigKeepsOtherContent(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(`{"numStartups":3,"projects":{"/a":{"x":1}}}`), 0o600))
	require.NoError(t, livecc.SeedConfig(dir, "/b", "sk-ant-0123456789abcdefghijKLMNOPQRSTUVWXYZ"))
	raw, err := os.ReadFile(filepath.Join(dir, ".claude.json"))
	require.NoError(t, err)
	s := string(raw)
	assert.Contains(t, s, `"numStartups": 3`)
	assert.Contains(t, s, `"/a"`)
	assert.Contains(t, s, `"hasCompletedOnboarding": true`)
	assert.Contains(t, s, `"ghijKLMNOPQRSTUVWXYZ"`) // the key's last 20 characters
	assert.NotContains(t, s, "sk-ant-")
}

// TestLiveSessionLifecycle starts a real session, checks its record and Claude
// Code's own listing, then SIGKILLs it: the record must stay behind (stale) and
// `claude agents` must stop listing it.
func TestLiveSessionLifecycle(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	s := livecc.Start(t, bin, livecc.Options{Name: "livecc:probe 50% ü"})

	rec := s.Record()
	require.NotNil(t, rec, "record at %s", s.RecordPath())
	assert.EqualValues(t, s.PID, rec["pid"])
	assert.Equal(t, s.SessionID, rec["sessionId"])
	assert.Equal(t, s.Cwd, rec["cwd"])
	assert.Equal(t, "livecc:probe 50% ü", rec["name"])
	assert.Equal(t, "livecc:probe 50% ü", s.Name)
	assert.Equal(t, "interactive", rec["kind"])
	require.NotEmpty(t, s.SocketPath, "2.1.328 publishes messagingSocketPath")
	assert.Equal(t, filepath.Join(s.TmpDir, "cc-socks", strconv.Itoa(s.PID)+".sock"), s.SocketPath)
	fi, err := os.Stat(s.SocketPath)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())

	agents := livecc.Agents(t, bin, s.ConfigDir)
	i := slices.IndexFunc(agents, func(a livecc.Agent) bool { return a.PID == s.PID })
	require.GreaterOrEqual(t, i, 0, "claude agents lists the session: %+v", agents)
	assert.Equal(t, s.SessionID, agents[i].SessionID)
	assert.Equal(t, s.Cwd, agents[i].Cwd)
	assert.Equal(t, "interactive", agents[i].Kind)

	s.Crash()
	assert.NotNil(t, s.Record(), "SIGKILL leaves the record behind")
	agents = livecc.Agents(t, bin, s.ConfigDir)
	assert.False(t, slices.ContainsFunc(agents, func(a livecc.Agent) bool { return a.PID == s.PID }),
		"claude agents drops a dead pid: %+v", agents)
}

// TestLiveCleanStopAndSharedRegistry runs two sessions in one config dir, posts
// into one inbox, and stops both cleanly.
func TestLiveCleanStopAndSharedRegistry(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	root := livecc.NewRoot(t)
	a := livecc.Start(t, bin, livecc.Options{Root: root, Label: "a"})
	b := livecc.Start(t, bin, livecc.Options{Root: root, Label: "b", NoAPIKey: true, WaitSettled: true})
	require.Equal(t, a.ConfigDir, b.ConfigDir)
	assert.NotEqual(t, a.SessionID, b.SessionID)

	agents := livecc.Agents(t, bin, a.ConfigDir)
	var pids []int
	for _, ag := range agents {
		pids = append(pids, ag.PID)
	}
	assert.ElementsMatch(t, []int{a.PID, b.PID}, pids)

	reply, err := livecc.Post(b.SocketPath, "hello from livecc", 30*time.Second)
	require.NoError(t, err)
	assert.Empty(t, reply, "the inbox socket answers nothing")
	line := b.WaitTranscript(t, `"operation":"enqueue"`, 60*time.Second)
	assert.Contains(t, line, `"content":"hello from livecc"`)

	a.Stop()
	assert.Nil(t, a.Record(), "a clean exit removes the record")
	b.Stop()
	assert.Nil(t, b.Record())
}
