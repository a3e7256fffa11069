package cli

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// TestWatchLinesLineUp: watch's text lines keep their columns whatever the
// names' lengths; a name longer than its column is cut with "…".
func TestWatchLinesLineUp(t *testing.T) {
	alive := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	at := time.Date(2026, 12, 2, 9, 6, 55, 0, time.UTC)
	var lines []string
	for i, name := range []string{"a", "proj-89", "ünïcode-name", "a-name-much-longer-than-the-column"} {
		r := domain.Record{File: "x.json", PID: 7 + i*10000, SessionID: "26df9a5b-d23c-4223-a45d-b9ec61fda65" + string(rune('0'+i)),
			Name: name, Kind: domain.KindInteractive, SocketPath: "/tmp/s.sock", Version: "2.1.328"}
		lines = append(lines, eventText(wire.NewEvent(domain.Event{Kind: domain.EventAppeared, Entry: domain.Classify(r, alive)}, at), false, 0))
	}
	lines = append(lines, eventText(wire.NewEvent(domain.Event{Kind: domain.EventGone, Entry: domain.Classify(domain.Record{File: "y.json", PID: 1, SessionID: "x", Name: "b"}, alive)}, at), false, 0))
	col := func(line, word string) int { return utf8.RuneCountInString(line[:strings.Index(line, word)]) }
	for _, line := range lines {
		assert.Equal(t, col(lines[0], "session "), col(line, "session "), "%q", line)
		assert.Equal(t, col(lines[0], "pid "), col(line, "pid "), "%q", line)
	}
	assert.Contains(t, lines[3], "a-name-much-lon… ")
	assert.NotContains(t, lines[3], "longer-than")
}

// TestWatchLineIsOneForHereAndThere: one printer for this machine's
// events and a host's (issue 27): a far session's line says it was
// already running and why it is not addressable yet, as a local one does,
// led by its host; a lost host is named with why.
func TestWatchLineIsOneForHereAndThere(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 6, 55, 0, time.UTC)
	r := domain.Record{File: "x.json", PID: 7, SessionID: "26df9a5b-d23c-4223-a45d-b9ec61fda650", Name: "proj", Kind: domain.KindInteractive, Version: "2.1.328"}
	alive := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	ev := wire.NewEvent(domain.Event{Kind: domain.EventAppeared, Entry: domain.Classify(r, alive), Initial: true}, at)
	require.NotEmpty(t, ev.Unaddressable, "a record with no socket is live but not addressable")
	here := eventText(ev, false, 0)
	ev.Host = "dev-box"
	there := eventText(ev, true, 0)
	for _, line := range []string{here, there} {
		assert.Contains(t, line, "(already running); not addressable yet: "+ev.Unaddressable)
	}
	assert.Contains(t, there, "appeared  dev-box           proj")
	assert.Equal(t, strings.Replace(here, "appeared  ", "appeared  dev-box           ", 1), there, "the host column is the only difference")
	lost := eventText(wire.Event{Event: wire.EventLost, At: wire.RFC3339(at), Host: "dev-box", Reason: "host_unreachable: gone\x1b[2J"}, true, 0)
	assert.Contains(t, lost, "lost      host dev-box: host_unreachable: gone")
	assert.NotContains(t, lost, "\x1b", "escaped")
}

// A message the trust policy held is a watch line that says it waits for
// approval and how to approve it (and deny it); no other line says so.
func TestWatchShowsAHeldMessage(t *testing.T) {
	e := ports.OutboxEvent{MessageID: 19, Address: "prod-api", At: time.Now(), State: domain.OutboxAwaitingApproval,
		Reason: "held for approval: hold by rule 1; nothing was sent: " + app.HeldHint}
	line := outboxLine(e)
	assert.True(t, strings.HasSuffix(line, `message 19 to "prod-api": awaiting_approval: held for approval: hold by rule 1; nothing was sent: peerctl outbox approve 19 delivers it, peerctl outbox deny 19 ends it`), line)
	assert.Equal(t, 1, strings.Count(line, "approve"), "the commands once: %s", line)
	assert.Equal(t, "peerctl outbox approve 19", approveCommand(e))
	e.State, e.Reason = domain.OutboxStored, "not_live: no live session matches"
	assert.NotContains(t, outboxLine(e), "approve")
	assert.Empty(t, approveCommand(e))
}

// A peerctl called over ssh names its caller by sshd's SSH_CONNECTION.
func TestSSHClient(t *testing.T) {
	assert.Equal(t, "10.0.0.7", sshClient("10.0.0.7 51234 10.0.0.1 22"))
	assert.Equal(t, "::1", sshClient("::1 51234 ::1 22"))
	assert.Empty(t, sshClient(""))
	assert.Empty(t, sshClient("10.0.0.7 51234"))
	assert.Empty(t, sshClient("* 1 2 3"), "never a glob")
}
