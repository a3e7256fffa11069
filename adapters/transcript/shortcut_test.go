package transcript

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// lineSeeds are transcript lines as Claude Code 2.1.328 writes them, and
// the same lines spelled in ways encoding/json decodes alike: keys in
// another case or with a folding letter, escaped letters.
func lineSeeds() []string {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	enq := strings.TrimSuffix(enqueueLine("hello", at), "\n")
	peer := strings.TrimSuffix(peerUser("hello", at, "peer", nil), "\n")
	return []string{
		enq, peer, strings.TrimSuffix(otherLine(at, 10), "\n"), `{"type":"mode","mode":"normal"}`, ``, `x`,
		strings.Replace(enq, `"timestamp"`, `"TimeStamp"`, 1),
		strings.Replace(enq, `"timestamp"`, `"time\u0073tamp"`, 1),
		strings.Replace(enq, `"timestamp"`, `"timeſtamp"`, 1),
		strings.Replace(enq, `"queue-operation"`, `"queue-op\u0065ration"`, 1),
		strings.Replace(peer, `"kind":"peer"`, `"kind":"p\u0065er"`, 1),
		strings.Replace(peer, `"kind":"peer"`, `"KIND":"peer"`, 1),
		strings.Replace(peer, `"timestamp"`, `"TIMESTAMP"`, 1),
	}
}

// TestLineShortcutsAgreeWithDecoder: a line skipped without decoding is one
// whose decoding says nothing, however Claude Code (or anyone) spells it.
func TestLineShortcutsAgreeWithDecoder(t *testing.T) {
	for _, line := range lineSeeds() {
		assert.Equal(t, examineDecoded([]byte(line), "hello"), examine([]byte(line), "hello"), "examine(%s)", line)
		at, ok := takenUpDecoded([]byte(line), "hello")
		gotAt, gotOK := takenUpLine([]byte(line), "hello")
		assert.Equal(t, ok, gotOK, "takenUpLine(%s)", line)
		assert.Equal(t, at, gotAt, "takenUpLine(%s)", line)
	}
	// The spelled-differently lines do confirm: the cases above are not
	// vacuous.
	seeds := lineSeeds()
	for _, line := range seeds[6:10] {
		assert.True(t, examine([]byte(line), "hello").hit, "examine(%s)", line)
	}
	for _, line := range append(seeds[10:], seeds[1]) {
		_, ok := takenUpLine([]byte(line), "hello")
		assert.True(t, ok, "takenUpLine(%s)", line)
	}
}

// FuzzLineShortcuts: examine and takenUpLine give what decoding the line
// gives, for any line and text.
func FuzzLineShortcuts(f *testing.F) {
	for _, line := range lineSeeds() {
		f.Add([]byte(line), "hello")
	}
	f.Fuzz(func(t *testing.T, line []byte, text string) {
		assert.Equal(t, examineDecoded(line, text), examine(line, text))
		at, ok := takenUpDecoded(line, text)
		gotAt, gotOK := takenUpLine(line, text)
		assert.Equal(t, ok, gotOK)
		assert.Equal(t, at, gotAt)
	})
}
