package courierexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHelpFlags(t *testing.T) {
	help := `Usage: claude [options] [command] [prompt]

Options:
  --add-dir <directories...>            More directories Claude can access
  --allowedTools, --allowed-tools <tools...>
      Comma or space-separated list of tool names to allow (e.g. "Bash(git *)
  -d, --debug [filter]                  Enable debug mode with optional category
                                        --debug='!hooks,!mcp')
                                        --resume <session-id>, continues that
  -p, --print                           Print response and exit (useful for
  --output-format=<format>              Output format
  --tmux                                Create a tmux session; use --tmux=classic
Commands:
  agents [options]                      List agents
`
	got := HelpFlags([]byte(help))
	for _, f := range []string{"--add-dir", "--allowedTools", "--allowed-tools", "-d", "--debug", "-p", "--print", "--output-format", "--tmux"} {
		assert.True(t, got[f], "%s is defined", f)
	}
	for _, f := range []string{"--resume", "--safe-mode", "agents", "--tmux=classic"} {
		assert.False(t, got[f], "%s is only mentioned, not defined", f)
	}
}

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// TestBeforeUDSComparesNumbers: releases older than 2.1.328 are reported, compared as
// numbers (2.1.99 < 2.1.328 < 10.0.0); a version that is not three
// numbers is not judged.
func TestBeforeUDSComparesNumbers(t *testing.T) {
	for version, want := range map[string]bool{
		"2.1.224 (Claude Code)": true,
		"2.1.327 (Claude Code)": true,
		"2.1.99":                true,
		"2.0.76 (Claude Code)":  true,
		"1.9.999":               true,
		"2.1.328 (Claude Code)": false,
		"2.1.332 (Claude Code)": false,
		"2.2.0":                 false,
		"10.0.0 (Claude Code)":  false,
		"":                      false,
		"dev build":             false,
		"2.1":                   false,
		"2.1.x (Claude Code)":   false,
	} {
		assert.Equal(t, want, beforeUDS(version), "%q", version)
	}
}

func TestProbeFailures(t *testing.T) {
	tests := []struct {
		name    string
		program string
		wantErr string
		path    bool
	}{
		{"not found", filepath.Join(t.TempDir(), "absent"), "find", false},
		{"--version fails", script(t, `echo "boom" >&2; exit 3`), "--version: stderr \"boom\": exit status 3", true},
		{"--help fails", script(t, `[ "$1" = --version ] && { echo 1.0; exit 0; }; exit 4`), "--help", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Config{Program: tt.program}).Probe(context.Background())
			require.Error(t, p.Err)
			assert.Contains(t, p.Err.Error(), tt.wantErr)
			assert.Equal(t, tt.path, p.Path != "")
			assert.Equal(t, New(Config{}).Flags(), p.Flags)
		})
	}
}

func TestProbeCanceledKillsTheGroup(t *testing.T) {
	// A program that never answers: the probe must end with the context and
	// leave no process behind (the grandchild sleep is in the same group).
	pidFile := filepath.Join(t.TempDir(), "pid")
	// Written aside and renamed, so the file never exists empty.
	prog := script(t, `sleep 300 & echo $! > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`; wait`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := New(Config{Program: prog}).Probe(ctx)
		assert.Error(t, p.Err)
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(string(data), &pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond, "grandchild %d was killed", pid)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	return !strings.Contains(string(b), ") Z ")
}

// TestProbeRelativeProgram: a relative program (--claude ./claude, or
// PEERCTL_CLAUDE=./claude) is run from our working directory, not from the
// child's own folder.
func TestProbeRelativeProgram(t *testing.T) {
	prog := script(t, `case "$1" in --version) echo "9.9.9 (Claude Code)";; --help) echo "  -p, --print  Print";; esac`)
	t.Chdir(filepath.Dir(prog))
	p := New(Config{Program: "./" + filepath.Base(prog)}).Probe(context.Background())
	require.NoError(t, p.Err)
	assert.Equal(t, "9.9.9 (Claude Code)", p.Version)
	assert.True(t, filepath.IsAbs(p.Path), "path %q", p.Path)
}

// TestProbeQuiet: the probe's claude, like the courier, runs with its
// auto-updater and non-essential traffic off.
func TestProbeQuiet(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	prog := script(t, `env > `+envFile+`; case "$1" in --version) echo "9.9.9 (Claude Code)";; --help) echo "  -p, --print  Print";; esac`)
	p := New(Config{Program: prog}).Probe(context.Background())
	require.NoError(t, p.Err)
	env, err := os.ReadFile(envFile)
	require.NoError(t, err)
	assert.Contains(t, string(env), "\nDISABLE_AUTOUPDATER=1\n")
	assert.Contains(t, string(env), "\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n")
}

// TestProbeCourierRunBoundedAsASend: doctor's courier run waits as long as
// a send's courier would (Config.Timeout), not the 10 s of --version and
// --help, and a courier that never calls says a busy machine is one cause:
// before, a courier that a send waited 13 s for was called broken at 10 s.
func TestProbeCourierRunBoundedAsASend(t *testing.T) {
	var help strings.Builder
	for _, f := range New(Config{}).Flags() {
		fmt.Fprintf(&help, "  %s <x>  a flag\n", f)
	}
	helpFile := filepath.Join(t.TempDir(), "help")
	require.NoError(t, os.WriteFile(helpFile, []byte(help.String()), 0o644))
	// --version and --help answer; the courier run itself never calls.
	prog := script(t, `case "$1" in --version) echo "2.1.332 (Claude Code)";; --help) cat `+helpFile+`;; *) exec sleep 300;; esac`)
	p := New(Config{Program: prog, Timeout: 1500 * time.Millisecond}).Probe(context.Background())
	require.NoError(t, p.Err)
	require.Empty(t, p.Missing)
	require.NotNil(t, p.Courier)
	require.Error(t, p.Courier.Err)
	assert.Contains(t, p.Courier.Err.Error(), "never reached peerctl's endpoint within 1.5s")
	assert.Contains(t, p.Courier.Err.Error(), "busy machine")
}
