package cli

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
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
		lines = append(lines, eventLine(domain.Event{Kind: domain.EventAppeared, Entry: domain.Classify(r, alive)}, at))
	}
	lines = append(lines, eventLine(domain.Event{Kind: domain.EventGone, Entry: domain.Classify(domain.Record{File: "y.json", PID: 1, SessionID: "x", Name: "b"}, alive)}, at))
	col := func(line, word string) int { return utf8.RuneCountInString(line[:strings.Index(line, word)]) }
	for _, line := range lines {
		assert.Equal(t, col(lines[0], "session "), col(line, "session "), "%q", line)
		assert.Equal(t, col(lines[0], "pid "), col(line, "pid "), "%q", line)
	}
	assert.Contains(t, lines[3], "a-name-much-lon… ")
	assert.NotContains(t, lines[3], "longer-than")
}
