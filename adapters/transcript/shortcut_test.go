package transcript

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// lineCase is a transcript line and whether it confirms "hello" (as an
// enqueue line, or as a peer take-up line).
type lineCase struct {
	line             string
	enqueue, takenUp bool
}

// lineCases are lines as Claude Code 2.1.328 writes them, and the same
// lines spelled otherwise: escaped letters (JSON.parse reads what they
// spell, so they still confirm) and keys in another case or with a
// folding letter (other keys to JSON.parse, so they do not).
func lineCases() []lineCase {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	enq := strings.TrimSuffix(enqueueLine("hello", at), "\n")
	peer := strings.TrimSuffix(peerUser("hello", at, "peer", nil), "\n")
	return []lineCase{
		{enq, true, false}, {peer, false, true},
		{strings.TrimSuffix(otherLine(at, 10), "\n"), false, false}, {`{"type":"mode","mode":"normal"}`, false, false}, {``, false, false}, {`x`, false, false},
		{strings.Replace(enq, `"timestamp"`, `"time\u0073tamp"`, 1), true, false},
		{strings.Replace(enq, `"queue-operation"`, `"queue-op\u0065ration"`, 1), true, false},
		{strings.Replace(peer, `"kind":"peer"`, `"kind":"p\u0065er"`, 1), false, true},
		{strings.Replace(enq, `"timestamp"`, `"TimeStamp"`, 1), false, false},
		{strings.Replace(enq, `"timestamp"`, `"timeſtamp"`, 1), false, false},
		{strings.Replace(enq, `"operation"`, `"Operation"`, 1), false, false},
		{strings.Replace(enq, `"content":"hello"`, `"content":"hello","Content":"other"`, 1), true, false},
		{strings.Replace(enq, `"content":"hello"`, `"Content":"hello"`, 1), false, false},
		{strings.Replace(peer, `"kind":"peer"`, `"KIND":"peer"`, 1), false, false},
		{strings.Replace(peer, `"timestamp"`, `"TIMESTAMP"`, 1), false, false},
		{strings.Replace(peer, `"type":"user"`, `"type":"user","Type":"assistant"`, 1), false, true},
	}
}

// TestLineShortcutsAgreeWithDecoder: lines confirm as Claude Code reads
// them, and a line skipped without decoding is one whose decoding says
// nothing.
func TestLineShortcutsAgreeWithDecoder(t *testing.T) {
	for _, c := range lineCases() {
		line := []byte(c.line)
		assert.Equal(t, examineDecoded(line, "hello"), examine(line, "hello"), "examine(%s)", c.line)
		assert.Equal(t, c.enqueue, examine(line, "hello").hit, "examine(%s)", c.line)
		at, ok := takenUpDecoded(line, "hello")
		gotAt, gotOK := takenUpLine(line, "hello")
		assert.Equal(t, ok, gotOK, "takenUpLine(%s)", c.line)
		assert.Equal(t, at, gotAt, "takenUpLine(%s)", c.line)
		assert.Equal(t, c.takenUp, gotOK, "takenUpLine(%s)", c.line)
	}
}

// FuzzLineShortcuts: examine and takenUpLine give what decoding the line
// gives, for any line and text.
func FuzzLineShortcuts(f *testing.F) {
	for _, c := range lineCases() {
		f.Add([]byte(c.line), "hello")
	}
	f.Fuzz(func(t *testing.T, line []byte, text string) {
		assert.Equal(t, examineDecoded(line, text), examine(line, text))
		at, ok := takenUpDecoded(line, text)
		gotAt, gotOK := takenUpLine(line, text)
		assert.Equal(t, ok, gotOK)
		assert.Equal(t, at, gotAt)
	})
}
