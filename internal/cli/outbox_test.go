package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// An id the outbox does not hold is not_found (its own exit code), not a
// usage error: nothing was wrong with how the command was written. show
// and cancel say it in one wording, and cancel says it without the
// service (PEERCTL_SERVE=off would refuse it as outbox_unavailable); the
// list of an outbox that never stored anything says it is empty.
func TestOutboxShowNotFound(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir(), "PEERCTL_SERVE": "off"}
	for _, op := range []string{"show", "cancel"} {
		r := evRun(t, env, nil, "outbox", op, "999")
		assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
		assert.Equal(t, "peerctl: not_found: message 999 is not in the outbox (peerctl outbox lists them)\n", r.stderr)
		r = evRun(t, env, nil, "outbox", op, "--json", "999")
		assert.Equal(t, wire.ExitNotFound, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"reason": "not_found"`)
	}
	r := evRun(t, env, nil, "outbox")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, "peerctl: the outbox is empty\n", r.stderr)
}

// The stored receipt's expiry is to the second in text, as the outbox's.
func TestStoredReceiptTimeToTheSecond(t *testing.T) {
	var out strings.Builder
	ios := newIOStreams(nil, &out, io.Discard, func(string) string { return "" })
	ref := &serve.Ref{ID: 7, Address: []byte("reviewer"), ExpiresAt: "2026-12-07T19:25:14.823935771Z"}
	require.NoError(t, printKept(ios, wire.Sent{Receipt: wire.Receipt{Outcome: "stored"}}, ref, false, false))
	assert.Contains(t, out.String(), `stored: message 7 for "reviewer" is kept until 2026-12-07T19:25:14Z and`)
}

// With --await-reply stdout is the reply's alone: a durable send kept, not
// handed over, has no reply, so its receipt goes to stderr (answer=$(...)
// was the receipt).
func TestKeptReceiptOfAnAwaitedSendIsOnStderr(t *testing.T) {
	var out, errOut strings.Builder
	ios := newIOStreams(nil, &out, &errOut, func(string) string { return "" })
	ref := &serve.Ref{ID: 2, Address: []byte("later"), ExpiresAt: "2026-12-07T19:25:14Z"}
	require.NoError(t, printKept(ios, wire.Sent{Receipt: wire.Receipt{Outcome: "stored"}}, ref, false, true))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), `stored: message 2 for "later"`)
	assert.Contains(t, errOut.String(), "follow it: peerctl outbox show 2\n")
	out.Reset()
	require.NoError(t, printKept(ios, wire.Sent{Receipt: wire.Receipt{Outcome: "stored"}}, ref, true, true))
	assert.Contains(t, out.String(), `"outcome": "stored"`, "--json: the document is stdout's")
}

// list with nothing live prints no bare header: it says so on stderr and
// points at --all; --json prints [] as ever.
func TestListNothingLiveSaysSo(t *testing.T) {
	stale := evRecord{PID: 999999999, SessionID: "22222222-2222-4222-8222-222222222222", Name: "gone", Cwd: "/tmp", Kind: "interactive", Version: "2.1.328", Status: "idle"}
	env := map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t, stale), "QWEN_HOME": t.TempDir(), "CODEX_HOME": t.TempDir(), "XDG_DATA_HOME": t.TempDir()}
	r := evRun(t, env, nil, "list")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Empty(t, r.stdout, "no bare header")
	assert.Contains(t, r.stderr, "peerctl: no live session; peerctl list --all shows every record and why it is not live\n")
	r = evRun(t, env, nil, "list", "--json")
	assert.Equal(t, "[]\n", r.stdout)
	assert.NotContains(t, r.stderr, "--all")
	r = evRun(t, env, nil, "list", "--all")
	assert.Contains(t, r.stdout, "gone")
	assert.NotContains(t, r.stderr, "no live session")
}

// list with no record anywhere does not point at --all (it has nothing
// to show), and list --all then prints no bare header but the same note:
// a registry folder that does not exist is said once, for the harness
// asked about (--harness qwen-code: Qwen Code's), and with folders that
// are there but empty list says there is no record.
func TestListNoRecordAtAllSaysSoOnce(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "none")
	env := map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(gone, "claude"), "QWEN_HOME": filepath.Join(gone, "qwen"),
		"CODEX_HOME": filepath.Join(gone, "codex"), "XDG_DATA_HOME": filepath.Join(gone, "data")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "peerctl: note: registry folder " + filepath.Join(gone, "claude", "sessions") + " does not exist; no sessions\n"},
		{[]string{"list", "--harness", "qwen-code"}, "peerctl: note: registry folder " + filepath.Join(gone, "qwen", "sessions") + " does not exist; no sessions\n"},
		{[]string{"list", "--harness", "codex"}, "peerctl: note: registry folder " + filepath.Join(gone, "codex") + " does not exist; no sessions\n"},
		{[]string{"list", "--config-dir", filepath.Join(gone, "cfg")}, "peerctl: note: registry folder " + filepath.Join(gone, "cfg", "sessions") + " does not exist; no sessions\n"},
		{[]string{"list", "--all"}, "peerctl: note: registry folder " + filepath.Join(gone, "claude", "sessions") + " does not exist; no sessions\n"},
	} {
		r := evRun(t, env, nil, tc.args...)
		assert.Equal(t, wire.ExitOK, r.code, "%q: %s", tc.args, r.stderr)
		assert.Empty(t, r.stdout, "%q", tc.args)
		assert.Equal(t, tc.want, r.stderr, "%q", tc.args)
	}
	env["CLAUDE_CONFIG_DIR"], env["QWEN_HOME"], env["CODEX_HOME"] = evConfigDir(t), t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"list"}, {"list", "--all"}} {
		r := evRun(t, env, nil, args...)
		assert.Equal(t, wire.ExitOK, r.code, r.stderr)
		assert.Empty(t, r.stdout, "%q: no bare header", args)
		assert.Equal(t, "peerctl: no session: no harness's registry holds a record\n", r.stderr, "%q", args)
		r = evRun(t, env, nil, append(args, "--json")...)
		assert.Equal(t, "[]\n", r.stdout, "%q --json", args)
		assert.Empty(t, r.stderr, "%q --json", args)
	}
}

// The outbox's table is aligned as list's (columns apart however long a
// cell), and it and outbox show print one time format: UTC, RFC 3339 to
// the second.
func TestOutboxTableAlignedOneTimeFormat(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir()}
	created := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.FixedZone("X", 3600))
	putOutbox(t, env, created, ports.OutboxMessage{Address: "a-rather-long-session-name-for-the-table"}, ports.OutboxMessage{Address: "r"})

	r := evRun(t, env, nil, "outbox")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 3)
	col := strings.Index(lines[0], "UPDATED")
	for _, l := range lines[1:] {
		assert.Equal(t, "2026-03-04T04:06:07Z", l[col:col+len("2026-03-04T04:06:07Z")], "UPDATED lines up, UTC to the second:\n%s", r.stdout)
	}
	assert.Regexp(t, `^ID\s+STATE\s+TARGET\s+TRIES\s+UPDATED\s+REASON$`, lines[0], "one word for one count: show's tries")
	assert.Contains(t, r.stdout, "a-rather-long-session-name-for-the-table  ", "a long target keeps two spaces before the next column")

	r = evRun(t, env, nil, "outbox", "show", "1")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "created:      2026-03-04T04:06:07Z\n")
	assert.Contains(t, r.stdout, "expires:      2026-03-04T05:06:07Z\n")
	assert.Contains(t, r.stdout, "  2026-03-04T04:06:07Z  stored")
	assert.NotRegexp(t, `(?m) $`, r.stdout, "no line ends in blanks")
	assert.NotRegexp(t, regexp.MustCompile(`\d{2}:\d{2}:\d{2}\.\d`), r.stdout, "no fractions of a second")
	assert.Contains(t, r.stdout, "tries:        0 (not tried yet)\n", "one line says what both counts are")
	// No service runs: the time it was due (past) is not its next try.
	assert.Contains(t, r.stdout, "next try:     when peerctl serve runs: messages wait for the service; peerctl serve, or any send --durable, starts it\n")
	assert.NotContains(t, r.stdout, "next attempt")
	assert.NotContains(t, r.stdout, "attempts:")

	env["PEERCTL_SERVE"] = "off"
	r = evRun(t, env, nil, "outbox", "cancel", "999")
	assert.Equal(t, wire.ExitNotFound, r.code, "an id the file does not hold needs no service: %s", r.stderr)
	assert.Equal(t, "peerctl: not_found: message 999 is not in the outbox (peerctl outbox lists them)\n", r.stderr)
	r = evRun(t, env, nil, "outbox", "--state", "expired")
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, "peerctl: no message in the outbox matches\n", r.stderr)
}

// outbox show's tries: a count never smaller than its part, said so that
// it reads as one.
func TestTriesTextNeverSmallerThanItsPart(t *testing.T) {
	for _, tc := range []struct {
		tries, handed int
		want          string
	}{
		{0, 0, "0 (not tried yet)"},
		{1, 1, "1 (it began a hand-over to the session)"},
		{1, 0, "1 (it began no hand-over)"},
		{3, 0, "3 (none of them began a hand-over)"},
		{3, 2, "3 (2 of them began a hand-over to the session)"},
	} {
		assert.Equal(t, tc.want, triesText(tc.tries, tc.handed))
	}
}

// A held send says it in two lines that do not repeat each other: the
// hold with its rule, then what to do with it; every command in them
// names the message.
func TestHeldReceiptTwoLinesEachCommandWithItsID(t *testing.T) {
	var out strings.Builder
	ios := newIOStreams(nil, &out, io.Discard, func(string) string { return "" })
	ref := &serve.Ref{ID: 5, State: "awaiting_approval", Address: []byte("quiet"), Rule: "rule 1: hold from=* to=quiet",
		Reason: []byte("held for approval: hold by rule 1 (hold from=* to=quiet): cli to \"quiet\"; nothing was sent: outbox approve delivers it, outbox deny ends it")}
	require.NoError(t, printKept(ios, wire.Sent{Receipt: wire.Receipt{Outcome: "awaiting_approval"}}, ref, false, false))
	assert.Equal(t, `awaiting_approval: message 5 for "quiet" is held by the trust policy (rule 1: hold from=* to=quiet); nothing was sent
approve it: peerctl outbox approve 5   (or end it: peerctl outbox deny 5; follow it: peerctl outbox show 5)
`, out.String())
	assert.NotRegexp(t, `peerctl outbox (approve|deny|show)( [^0-9]|$|\n)`, out.String(), "a command with no id")
}

// outbox show, cancel, retry, approve and deny complete the outbox's ids
// (approve and deny the held ones), never file names; with no outbox, or
// with none to read it (no peerctl-mcp beside or on PATH), nothing.
func TestOutboxCommandsCompleteIDs(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir()}
	r := evRun(t, env, nil, "__complete", "outbox", "show", "")
	got, directive := completions(t, r.stdout)
	assert.Empty(t, got, "no outbox")
	assert.Equal(t, ":4", directive, "no file names")

	putOutbox(t, env, time.Now(), ports.OutboxMessage{Address: "reviewer"}, ports.OutboxMessage{Address: "quiet", State: domain.OutboxAwaitingApproval})

	for _, use := range []string{"show", "cancel", "retry"} {
		r := evRun(t, env, nil, "__complete", "outbox", use, "")
		require.Equal(t, 0, r.code, r.stderr)
		got, directive := completions(t, r.stdout)
		assert.Equal(t, map[string]string{"1": "stored  reviewer", "2": "awaiting_approval  quiet"}, got, use)
		assert.Equal(t, ":4", directive, use)
	}
	for _, use := range []string{"approve", "deny"} {
		got, _ := completions(t, evRun(t, env, nil, "__complete", "outbox", use, "").stdout)
		assert.Equal(t, map[string]string{"2": "awaiting_approval  quiet"}, got, use)
	}
	got, _ = completions(t, evRun(t, env, nil, "__complete", "outbox", "show", "2").stdout)
	assert.Equal(t, map[string]string{"2": "awaiting_approval  quiet"}, got, "the typed prefix")
	got, directive = completions(t, evRun(t, env, nil, "__complete", "outbox", "show", "1", "").stdout)
	assert.Empty(t, got, "one id only")
	assert.Equal(t, ":4", directive)

	t.Setenv("PATH", t.TempDir())
	r = evRun(t, env, func(c *factory) {
		c.store = nil // peerctl: the outbox is read by peerctl-mcp, and there is none
		c.executable = func() (string, error) { return filepath.Join(t.TempDir(), "peerctl"), nil }
	}, "__complete", "outbox", "show", "")
	got, directive = completions(t, r.stdout)
	assert.Empty(t, got)
	assert.Contains(t, []string{":4", ":5"}, directive, "no file names")
}

// putOutbox puts msgs into the outbox of env's state folder, making it:
// each with the text "hi", created and due at created, expiring an hour on.
func putOutbox(t *testing.T, env map[string]string, created time.Time, msgs ...ports.OutboxMessage) {
	t.Helper()
	p, err := serve.PathsFor(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.DB), 0o700))
	ctx := context.Background()
	st, err := outbox.Open(ctx, p.DB)
	require.NoError(t, err)
	for _, m := range msgs {
		m.Text, m.Created, m.Expires, m.NextAt = "hi", created, created.Add(time.Hour), created
		_, _, err := st.Put(ctx, m)
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
}
