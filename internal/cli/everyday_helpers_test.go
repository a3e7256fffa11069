package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/internal/jqfilter"
	"github.com/peerctl/peerctl/internal/outboxstore"
	"github.com/peerctl/peerctl/test/testbin"
)

// evResult is one in-process peerctl run.
type evResult struct {
	code           int
	stdout, stderr string
}

// evRun runs peerctl in-process with env as its whole environment; tweak
// may adjust the cli (pid, buildInfo) before it runs.
func evRun(t *testing.T, env map[string]string, tweak func(*factory), args ...string) evResult {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	c := newFactory(strings.NewReader(""), &out, &errb, getenv)
	c.store = outboxstore.Store{}  // as peerctl-mcp: the outbox read here
	c.compileJQ = jqfilter.Compile // and --jq filtered here
	c.environ = func() []string {
		kv := make([]string, 0, len(env))
		for k, v := range env {
			kv = append(kv, k+"="+v)
		}
		return kv
	}
	if tweak != nil {
		tweak(c)
	}
	code := execute(context.Background(), c, args)
	return evResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// evRecord is a registry record as Claude Code 2.1.328 writes it.
type evRecord struct {
	PID        int    `json:"pid"`
	SessionID  string `json:"sessionId"`
	Cwd        string `json:"cwd"`
	StartedAt  int64  `json:"startedAt"`
	ProcStart  string `json:"procStart,omitempty"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	SocketPath string `json:"messagingSocketPath,omitempty"`
	Name       string `json:"name"`
	NameSource string `json:"nameSource"`
	Status     string `json:"status"`
	// PeerProtocol is omitted when 0 (Claude Code 2.1.328 writes 1).
	PeerProtocol int `json:"peerProtocol,omitempty"`
}

// evLiveRecord builds a record that is live for pid: its real procStart.
func evLiveRecord(t *testing.T, pid int, id, name, cwd, socket string) evRecord {
	t.Helper()
	start, err := procliveness.StartTime("/proc", pid)
	require.NoError(t, err, "read start time of pid %d", pid)
	return evRecord{PID: pid, SessionID: id, Cwd: cwd, StartedAt: 1796027521308, ProcStart: start, Version: "2.1.328",
		Kind: "interactive", SocketPath: socket, Name: name, NameSource: "derived", Status: "idle"}
}

// evConfigDir makes a config dir whose sessions folder holds recs as <pid>.json.
func evConfigDir(t *testing.T, recs ...evRecord) string {
	t.Helper()
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "sessions")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, r := range recs {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.json", r.PID)), b, 0o600))
	}
	return cfg
}

// evSocketDir makes a 0700 folder for socket paths.
func evSocketDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "cc-socks")
	require.NoError(t, os.Mkdir(d, 0o700))
	require.NoError(t, os.Chmod(d, 0o700))
	return d
}

// evBuild builds the peerctl binary (cmd/peerctl, as make build does).
func evBuild(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, testbin.Peerctl)
}

// evCleanEnv is os.Environ without any Claude Code session variable, so
// tests behave the same when run from inside a session.
func evCleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDECODE" || strings.HasPrefix(k, "CLAUDE_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
