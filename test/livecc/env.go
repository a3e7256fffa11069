//go:build unix

package livecc

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Scrub returns env without the variables that would tie a child process to the
// session, terminal or account the tests run in: CLAUDECODE, CLAUDE_CODE_*,
// CLAUDE_CONFIG_DIR, ANTHROPIC_*, TMUX, TMUX_PANE and XDG_* (XDG_RUNTIME_DIR
// would move the inbox socket out of the test's TMPDIR). The input is not changed.
func Scrub(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "CLAUDECODE", name == "CLAUDE_CONFIG_DIR", name == "TMUX", name == "TMUX_PANE",
			strings.HasPrefix(name, "CLAUDE_CODE_"), strings.HasPrefix(name, "ANTHROPIC_"),
			strings.HasPrefix(name, "XDG_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}

// OfflineEnv turns off what Claude Code does on the network besides its model
// calls (read in the 2.1.224, 2.1.328 and 2.1.332 binaries): DISABLE_AUTOUPDATER
// (the background auto-update of an interactive session) and
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC (telemetry, error reporting, feature
// flags and the update checks, all at once). Every Claude Code the tests run
// has it: the sessions Start runs, and programs run with Env.
var OfflineEnv = []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}

// Env returns an environment for running another program (the peerctl binary,
// `claude agents`, `claude -p`) against the registry in configDir: this
// process's environment scrubbed as by Scrub, then OfflineEnv,
// CLAUDE_CONFIG_DIR=configDir, then extra ("NAME=value" entries, later ones
// win on lookup by os/exec).
func Env(configDir string, extra ...string) []string {
	env := append(Scrub(os.Environ()), OfflineEnv...)
	env = append(env, "CLAUDE_CONFIG_DIR="+configDir)
	return append(env, extra...)
}

// Agent is one entry of `claude agents --json` (2.1.328: a JSON array of
// these). StartedAt is epoch milliseconds; Name and Status may be empty.
type Agent struct {
	PID       int    `json:"pid"`
	Cwd       string `json:"cwd"`
	Kind      string `json:"kind"`
	StartedAt int64  `json:"startedAt"`
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
	Status    string `json:"status"`
}

// Agents runs `bin agents --json` with CLAUDE_CONFIG_DIR=configDir (in an
// environment built by Env, with HOME set to a fresh empty folder) and returns
// the sessions it lists. It fails the test when the
// command fails, takes longer than 60 s, or prints anything but a JSON array.
func Agents(t testing.TB, bin, configDir string) []Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "agents", "--json")
	cmd.Env = Env(configDir, "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude agents --json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var agents []Agent
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &agents); err != nil {
		t.Fatalf("claude agents --json printed no JSON array: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return agents
}

// Env is the package Env for this session's registry, with HOME and TMPDIR set
// to the session's own (so a program run with it sees what the session sees),
// then extra.
func (s *Session) Env(extra ...string) []string {
	return Env(s.ConfigDir, append([]string{"HOME=" + s.HomeDir, "TMPDIR=" + s.TmpDir}, extra...)...)
}
