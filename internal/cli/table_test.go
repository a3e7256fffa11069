package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// starts is the terminal column where each cell of line begins (cells
// are parted by two spaces or more), colour codes not counted.
func starts(line string) []int {
	var out []int
	col, gap := 0, 2
	for _, r := range stripSGR(line) {
		if r != ' ' && gap >= 2 {
			out = append(out, col)
		}
		if r == ' ' {
			gap++
		} else {
			gap = 0
		}
		col += runewidth.RuneWidth(r)
	}
	return out
}

// stripSGR is s without paint's colour codes.
func stripSGR(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		s = s[:i] + s[i+j+1:]
	}
}

// aligned fails unless every line of table has its cells at the columns
// of its first.
func aligned(t *testing.T, table string, what ...any) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	for _, l := range lines[1:] {
		assert.Equal(t, starts(lines[0]), starts(l), "%v: %q in\n%s", what, l, table)
	}
}

// TestTablesAlignByScreenColumns: a name with wide characters (日本 takes
// four columns) keeps its row's next columns in line with the others', in
// colour and without; a long waitingFor is cut with "…" and does not widen
// the STATUS column of every row.
func TestTablesAlignByScreenColumns(t *testing.T) {
	rows := []wire.Session{
		{Harness: "claude-code", SessionID: "11111111-aaaa", Name: "build-ü日本e\u0301", PID: 7, Status: "idle", Cwd: "/a", Addressable: true, Verdict: "live"},
		{Harness: "claude-code", SessionID: "22222222-bbbb", Name: "short", PID: 8, Status: "waiting", WaitingFor: "permission prompt: " + strings.Repeat("x", 300),
			Cwd: "/b", Addressable: true, Verdict: "live"},
		{Harness: "qwen-code", SessionID: "33333333-cccc", Name: "third", PID: 9, Status: "busy", Cwd: "/c", Addressable: true, Verdict: "live"},
	}
	for _, colour := range []bool{false, true} {
		var out strings.Builder
		ios := newIOStreams(nil, &out, &strings.Builder{}, func(string) string { return "" })
		ios.terminal = func(any) bool { return colour }
		require.NoError(t, printSessions(ios, rows, false, false, true))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Len(t, lines, 4, out.String())
		if colour {
			assert.Contains(t, out.String(), "\x1b[", "painted")
		}
		aligned(t, out.String(), "colour", colour)
		assert.Contains(t, lines[2], "…", "the long status is cut")
		for _, line := range lines {
			assert.LessOrEqual(t, shownWidth(line), 150, "colour %v: a row too wide: %q", colour, line)
		}
	}
}

// TestTableWidths: a table measures what a terminal shows; cut and fit
// count columns, not runes.
func TestTableWidths(t *testing.T) {
	var tw table
	tw.add("ID", paint(true, colourNone, "STATE"), "TARGET", "REASON")
	tw.add("1", paint(true, colourGreen, "delivered"), "日本日本", "ok")
	tw.add("12", paint(true, colourRed, "refused"), "x", "no")
	var out strings.Builder
	require.NoError(t, tw.write(&out))
	aligned(t, out.String())
	assert.Equal(t, "日本…", cut("日本日本", 6))
	assert.Equal(t, "日本日本", cut("日本日本", 8))
	assert.Equal(t, "日本  ", fit("日本", 6))
	assert.Equal(t, paint(true, colourRed, "日本…"), cutPainted(paint(true, colourRed, "日本日本"), 6), "colour kept")
	assert.Equal(t, 4, shownWidth(paint(true, colourRed, "日本")))
}

// wide is a name as a terminal shows it narrower or wider than it has
// runes: 日本 takes four columns in two runes, e + U+0301 (a combining
// acute) one column in two runes.
const wide = "日本e\u0301"

// TestEveryTableAlignsByScreenColumns: doctor, enrich, hosts list, policy
// list and show lay their columns out by what a terminal shows (one table
// writer), so a cell with wide characters or a combining mark keeps the
// columns after it in line.
func TestEveryTableAlignsByScreenColumns(t *testing.T) {
	t.Run("doctor", func(t *testing.T) {
		for _, colour := range []bool{false, true} {
			var out strings.Builder
			ios := newIOStreams(nil, &out, &strings.Builder{}, func(string) string { return "" })
			ios.terminal = func(any) bool { return colour }
			doc := wire.Doctor{OK: true, Summary: "ok", Rows: []wire.DoctorRow{
				{Check: "claude", Health: "ok", Text: "found"},
				{Check: wide, Health: "warn", Text: "a far side's check"},
				{Check: "x", Health: "problem", Text: "missing"},
			}}
			require.NoError(t, printDoctor(ios, doc, false))
			table, _ := strings.CutSuffix(out.String(), "ok\n")
			aligned(t, table, "colour", colour)
		}
	})
	t.Run("enrich", func(t *testing.T) {
		r := evRun(t, map[string]string{"CLAUDE_CONFIG_DIR": evConfigDir(t)}, nil, "enrich", wide, "11111111-2222", "x")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, wide)
		aligned(t, r.stdout)
	})
	t.Run("hosts list", func(t *testing.T) {
		env := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
		for _, args := range [][]string{{"build-box", "--set", "peerctl=/opt/" + wide + "/peerctl", "--set", "config-dir=/c"}, {"dev@10.0.0.7", "--set", "config-dir=/d"}} {
			r := evRun(t, env, nil, append([]string{"hosts", "add"}, args...)...)
			require.Equal(t, 0, r.code, r.stderr)
		}
		r := evRun(t, env, nil, "hosts", "list")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, wide)
		aligned(t, r.stdout)
	})
	t.Run("policy list", func(t *testing.T) {
		xdg := t.TempDir()
		writePolicy(t, xdg, "deny from=mcp:"+wide+" to=prod-*", "allow from=cli to="+wide+"-* harness=claude-code")
		r := evRun(t, map[string]string{"XDG_CONFIG_HOME": xdg, "CLAUDE_CONFIG_DIR": evConfigDir(t)}, nil, "policy", "list")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, wide)
		aligned(t, r.stdout)
	})
	t.Run("show", func(t *testing.T) {
		var out strings.Builder
		require.NoError(t, printDetail(&out, wire.Show{Session: wire.Session{Name: wide, Cwd: "/srv/" + wide, Verdict: "live"}}, true, false))
		assert.Contains(t, out.String(), wide)
		// Every value, and every gloss under it, starts in one column.
		var at []int
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			s := starts(l)
			at = append(at, s[min(len(s)-1, 1)])
		}
		for _, c := range at {
			assert.Equal(t, at[0], c, out.String())
		}
	})
}

// onTerminal makes a factory's stdout a terminal (one that tells no
// width: 80 columns).
func onTerminal(c *factory) { c.io.terminal = func(any) bool { return true } }

// TestRowsFitTheTerminal: on a terminal, list's, outbox's and watch's rows
// with ordinary data (a long name, a deep folder, a long reason) are cut
// to fit its width (80 when it tells none); piped, each keeps its cells.
func TestRowsFitTheTerminal(t *testing.T) {
	name, cwd := "feature-authentication-refactor-2", "/home/someone/src/github.com/example-org/project/services/api-gateway"
	rows := []wire.Session{
		{Harness: "claude-code", SessionID: "26df9a5b-d23c-4223-a45d-b9ec61fda650", Name: name, PID: 4194301, Status: "waiting", WaitingFor: "permission prompt",
			Cwd: cwd, Addressable: true, Verdict: "live", File: "4194301.json", Reason: "pid alive, start time matches, pid namespace matches"},
		{Harness: "qwen-code", SessionID: "33333333-cccc", Name: "b", PID: 9, Status: "idle", Cwd: "/c", Addressable: true, Verdict: "live"},
	}
	for _, all := range []bool{false, true} {
		for _, terminal := range []bool{false, true} {
			var out strings.Builder
			ios := newIOStreams(nil, &out, &strings.Builder{}, func(string) string { return "" })
			ios.terminal = func(any) bool { return terminal }
			require.NoError(t, printSessions(ios, rows, all, false, false))
			aligned(t, out.String(), all, terminal)
			widest := 0
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				widest = max(widest, shownWidth(l))
			}
			if terminal {
				assert.LessOrEqual(t, widest, 80, "all %v:\n%s", all, out.String())
				assert.Contains(t, out.String(), "…")
				continue
			}
			assert.Greater(t, widest, 80, "piped: nothing cut to fit")
			assert.Contains(t, out.String(), name)
		}
	}

	env := map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(), "HOME": t.TempDir()}
	putOutbox(t, env, time.Now(), ports.OutboxMessage{Address: name, Reason: "not_live: no live session matches; it waits for its session to come back"})
	for _, terminal := range []bool{false, true} {
		var tweak func(*factory)
		if terminal {
			tweak = onTerminal
		}
		r := evRun(t, env, tweak, "outbox")
		require.Equal(t, wire.ExitOK, r.code, r.stderr)
		for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			if terminal {
				assert.LessOrEqual(t, shownWidth(l), 80, "%q", l)
			}
		}
		assert.Equal(t, !terminal, strings.Contains(r.stdout, "come back"), r.stdout)
	}

	at := time.Date(2026, 12, 2, 9, 6, 55, 0, time.UTC)
	r := domain.Record{File: "x.json", PID: 4194301, SessionID: rows[0].SessionID, Name: name, Kind: domain.KindInteractive, SocketPath: "/tmp/s.sock", Version: "2.1.328"}
	alive := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	ev := wire.NewEvent(domain.Event{Kind: domain.EventAppeared, Entry: domain.Classify(r, alive), Initial: true}, at)
	for _, withHost := range []bool{false, true} {
		line := eventText(ev, withHost, 80)
		assert.LessOrEqual(t, shownWidth(line), 80, "%q", line)
		assert.Contains(t, line, " 26df9a5b  pid 41943", "the id as list shows it")
		assert.Contains(t, eventText(ev, withHost, 0), "session "+rows[0].SessionID+"  pid 4194301  ", "piped: whole")
	}
}
