package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// show --explain says under each row whose name is not plain what it
// means (procStart, pidDomain, peerProtocol, addressable…); show alone
// stays the rows, and --json stays the document (with --explain a usage
// error: its fields are in docs/OUTPUT.md).
func TestShowExplainsItsRows(t *testing.T) {
	cfg := evConfigDir(t, evLiveRecord(t, os.Getpid(), "33333333-3333-4333-8333-333333333333", "alpha", "/tmp", ""))
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}

	plain := evRun(t, env, nil, "show", "alpha")
	require.Equal(t, wire.ExitOK, plain.code, plain.stderr)
	assert.NotContains(t, plain.stdout, "clock ticks")

	r := evRun(t, env, nil, "show", "--explain", "alpha")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	for _, row := range []string{"procStart", "pidDomain", "peerProtocol", "addressable", "endpoint"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+row+`:.*\n\s+- \S`), r.stdout, "%s is explained under its row", row)
	}
	assert.Contains(t, r.stdout, "clock ticks since boot")
	var rows []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "- ") {
			rows = append(rows, l)
		}
	}
	assert.Equal(t, plain.stdout, strings.Join(rows, "\n"), "the rows are show's own, the glosses between them")

	r = evRun(t, env, nil, "show", "--explain", "--json", "alpha")
	assert.Equal(t, wire.ExitUsage, r.code)
	assert.Contains(t, r.stderr, "--explain is for the text")
}

// show --explain explains a Qwen Code session's rows in its harness's
// words (ports.Glosser), not Claude Code's: its peerProtocol 0 is no
// "cannot be messaged", its kind tui no "print, bg and daemon".
func TestShowExplainsInTheHarnesssWords(t *testing.T) {
	qsock := filepath.Join(evSocketDir(t), "q1.sock")
	socktest.Listen(t, qsock, false)
	home := qwenHome(t, "aaaaaaaa-1111-4111-8111-111111111111", qsock)
	env := map[string]string{"CLAUDE_CONFIG_DIR": t.TempDir(), "QWEN_HOME": home, "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	r := evRun(t, env, nil, "show", "--explain", "app-3b")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "cannot be messaged")
	assert.NotContains(t, r.stdout, "print, bg and daemon")
	assert.Contains(t, r.stdout, "Qwen Code's record publishes no protocol version")
	assert.Contains(t, r.stdout, "tui is an interactive Qwen Code session")
}

// show of a record whose process has ended says its status is the
// record's last word, not the session's now; a live one's is as it is.
func TestShowStaleStatusIsTheLastRecorded(t *testing.T) {
	rec := evLiveRecord(t, os.Getpid(), "44444444-4444-4444-8444-444444444444", "gone", "/tmp", "")
	rec.PID = testproc.DeadPID(t)
	live := evLiveRecord(t, os.Getpid(), "55555555-5555-4555-8555-555555555555", "here", "/tmp", "")
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, rec, live), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	r := evRun(t, env, nil, "show", rec.SessionID)
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^verdict:\s+stale$`, r.stdout)
	assert.Regexp(t, `(?m)^status:\s+idle \(as last recorded; the process has ended\)$`, r.stdout)
	r = evRun(t, env, nil, "show", "here")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Regexp(t, `(?m)^status:\s+idle$`, r.stdout)
}
