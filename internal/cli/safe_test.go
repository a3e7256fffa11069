package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// hostile holds bytes and runes that a terminal acts on or that hide or
// reorder text: ESC sequences, a C1 CSI, a newline, a right-to-left
// override, a zero-width space and a line separator.
const hostile = "\x1b[2J\x1b[31m\u009b1m\nFAKE\u202e\u200b\u2028"

// assertTerminalSafe fails when out carries any of hostile's dangerous runes.
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	assert.True(t, utf8.ValidString(out), "%s: invalid UTF-8", what)
	for _, r := range "\x1b\u009b\u202e\u200b\u2028" {
		assert.NotContains(t, out, string(r), "%s: raw %U reached the terminal", what, r)
	}
	assert.NotContains(t, out, "\nFAKE", "%s: an embedded newline split a line", what)
}

// TestHumanOutputIsTerminalSafe: ids, names and socket paths come from files
// any local process can write; what peerctl prints for people (refusals,
// candidates, receipts, the list table) must not carry raw terminal
// controls or invisible/bidi characters.
func TestHumanOutputIsTerminalSafe(t *testing.T) {
	sock := evSocketDir(t)
	p1, p2 := testproc.Sleeper(t), testproc.Sleeper(t)
	id1 := "11111111-1111-4111-8111-111111111111" + hostile
	id2 := "22222222-2222-4222-8222-222222222222"
	r1 := evLiveRecord(t, p1, id1, "twin"+hostile, t.TempDir(), sock+"/1.sock")
	r2 := evLiveRecord(t, p2, id2, "twin"+hostile, t.TempDir(), sock+"/missing"+hostile+".sock")
	cfg := evConfigDir(t, r1, r2)
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "PEERCTL_CLAUDE": "/nonexistent/claude"}

	// A refusal with both candidates.
	r := evRun(t, env, nil, "send", "--transport", "socket", "twin"+hostile, "hi")
	assert.Equal(t, wire.ExitIdentityMismatch, r.code, r.stderr)
	assert.Equal(t, 2, strings.Count(r.stderr, "  candidate: "))
	assertTerminalSafe(t, "refusal with candidates", r.stderr)

	// The list table.
	r = evRun(t, env, nil, "list", "--all")
	assertTerminalSafe(t, "list --all", r.stdout)
	assert.Equal(t, 3, strings.Count(r.stdout, "\n"), "one line per record plus the header: %q", r.stdout)

	// A delivery failure whose detail names the socket path.
	cfg2 := evConfigDir(t, evLiveRecord(t, p2, id2, "solo", t.TempDir(), sock+"/missing"+hostile+".sock"))
	r = evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": cfg2}, nil, "send", "--transport", "socket", "--no-confirm", "solo", "hi")
	assert.Equal(t, wire.ExitDeliveryFailed, r.code, r.stderr)
	assertTerminalSafe(t, "delivery_failed detail", r.stderr)
}

func TestSafe(t *testing.T) {
	for _, s := range []string{hostile, "\xff\xfe", "a\tb"} {
		out := safe(s)
		assertTerminalSafe(t, fmt.Sprintf("safe(%q)", s), out)
		assert.NotContains(t, out, "\t")
	}
	assert.Equal(t, "build:main 50% ünï", safe("build:main 50% ünï"), "printable text is kept as is")
	for _, r := range "\u200b\u202e\u2028\u00a0\ufeff" {
		assert.Equal(t, `alpha\u`+fmt.Sprintf("%04x", r), safe("alpha"+string(r)), "invisible %U alone is escaped too", r)
	}
}

// The confirmation warning and the wait's notes name paths and errors
// built from registry data (the transcript path holds the session id):
// they reach the terminal only through safe, here and from a far side.
func TestConfirmOutputIsTerminalSafe(t *testing.T) {
	res := app.SendResult{}
	res.Outcome = domain.OutcomePosted
	res.ConfirmNote = "no enqueue line with the text in /cfg/projects/x/" + hostile + ".jsonl within 5s"
	for _, end := range []domain.WaitEnd{domain.WaitIdle, domain.WaitExited, domain.WaitTimeout, domain.WaitInterrupted, domain.WaitFailed} {
		res.WaitEnd, res.WaitNote = end, "record "+hostile+".json was removed"
		sent, err := app.Sent(res, nil, false)
		require.NoError(t, err)
		var out, errs strings.Builder
		c := &factory{io: newIOStreams(nil, &out, &errs, nil)}
		_ = printSent(c.io, sent, false, false)
		assert.Contains(t, errs.String(), "warning: posted, not confirmed")
		assertTerminalSafe(t, "confirmation warning", errs.String())
		assert.Equal(t, 1, strings.Count(out.String(), "wait: "), "one wait line: %q", out.String())
		assertTerminalSafe(t, "receipt and wait line ("+end.String()+")", out.String())
	}

	// --no-confirm: the user asked for no confirmation, so no warning.
	res.ConfirmNote, res.ConfirmSkipped, res.WaitEnd = "confirmation skipped", true, domain.WaitNone
	sent, err := app.Sent(res, nil, false)
	require.NoError(t, err)
	var out, errs strings.Builder
	require.NoError(t, printSent(newIOStreams(nil, &out, &errs, nil), sent, false, false))
	assert.Empty(t, errs.String())
}

// TestJSONOutputIsTerminalSafe: list --json keeps a hostile name's value,
// but writes its DEL, C1 controls and bidi overrides as \u escapes (what a
// screen showing the JSON gets), and its endpoint percent-escapes them, so
// `jq -r '.[].endpoint'` prints one printable line per session.
func TestJSONOutputIsTerminalSafe(t *testing.T) {
	sock := evSocketDir(t)
	p := testproc.Sleeper(t)
	name := "evil" + hostile + "\x7f\u0085"
	socktest.Listen(t, sock+"/3.sock", false)
	cfg := evConfigDir(t, evLiveRecord(t, p, "33333333-3333-4333-8333-333333333333", name, t.TempDir(), sock+"/3.sock"))
	r := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": cfg}, nil, "list", "--json")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assertTerminalSafe(t, "list --json", r.stdout)
	for _, c := range "\x7f\u0085" {
		assert.NotContains(t, r.stdout, string(c), "raw %U in the JSON", c)
	}
	var out []wire.Session
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	require.Len(t, out, 1)
	assert.Equal(t, name, out[0].Name, "the same value, escaped")
	ep := out[0].Endpoint
	assertTerminalSafe(t, "the endpoint's value", ep)
	assert.NotContains(t, ep, "\x7f")
	assert.Contains(t, ep, "evil%1B[2J%1B[31m%C2%9B1m%0AFAKE%E2%80%AE%E2%80%8B%E2%80%A8%7F%C2%85:")
	back, err := domain.ParseEndpoint(ep)
	require.NoError(t, err)
	assert.Equal(t, name, back.Name())
}

// A long name does not pad every row of a table: long cells are cut with
// "…" (show prints the whole value).
func TestTableCellsAreCut(t *testing.T) {
	sock := evSocketDir(t)
	p1, p2 := testproc.Sleeper(t), testproc.Sleeper(t)
	long := strings.Repeat("n", 200<<10)
	cfg := evConfigDir(t,
		evLiveRecord(t, p1, "44444444-4444-4444-8444-444444444444", long, "/"+strings.Repeat("d", 300), sock+"/4.sock"),
		evLiveRecord(t, p2, "55555555-5555-4555-8555-555555555555", "short", t.TempDir(), sock+"/5.sock"))
	for _, args := range [][]string{{"list"}, {"list", "--all"}} {
		r := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": cfg}, nil, args...)
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		require.Len(t, lines, 3, "%v", args)
		for _, line := range lines {
			n := utf8.RuneCountInString(line)
			assert.True(t, n <= 400, "%v: a row of %d characters", args, n)
		}
		assert.True(t, strings.Contains(r.stdout, "nnn…"), "%v: the long name is cut with …", args)
	}
}

// A send's text says its receipt first and its notes after it, the
// refusal of a receipt with ok false last, as a person reads them; with
// --await-reply the receipt and its notes are on stderr, stdout is the
// reply's alone.
func TestPrintSentSaysTheReceiptFirst(t *testing.T) {
	res := app.SendResult{OtherInbound: []domain.Inbound{{From: "uds:/x", FromName: "other", Text: "hi"}}}
	res.Outcome = domain.OutcomePosted
	res.ConfirmNote = "no enqueue line within 5s"
	sent, err := app.Sent(res, domain.Refuse(domain.ReasonNoReply, "no reply within 2m0s"), true)
	require.NoError(t, err)
	var out, errs strings.Builder
	err = printSent(newIOStreams(nil, &out, &errs, nil), sent, false, true)
	assert.Equal(t, silentError{code: wire.ExitNoReply}, err)
	assert.Empty(t, out.String(), "no reply: nothing on stdout")
	lines := strings.Split(strings.TrimSpace(errs.String()), "\n")
	require.Len(t, lines, 4, "%q", errs.String())
	assert.True(t, strings.HasPrefix(lines[0], "posted: "), "%q", lines[0])
	assert.Contains(t, lines[1], "a message from \"other\"")
	assert.Contains(t, lines[2], "warning: posted, not confirmed")
	assert.Equal(t, "peerctl: no_reply: no reply within 2m0s", lines[3])
}
