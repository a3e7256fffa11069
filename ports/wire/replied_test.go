package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRepliedReasonReadsBack: the replied line's words are read back as
// written: the name (quoted, any bytes), the reply's first ReplyQuote
// bytes; another reason is no reply.
func TestRepliedReasonReadsBack(t *testing.T) {
	for _, tc := range []struct{ from, text, words string }{
		{"rev", "on main", "on main"},
		{`a "b", 3 bytes): c`, "x bytes): y\nz", "x bytes): y\nz"},
		{"", strings.Repeat("é", 150), strings.Repeat("é", 100) + "…"},
	} {
		r := RepliedReason(tc.from, tc.text)
		from, words, ok := ReplyOf(r)
		assert.True(t, ok, r)
		assert.Equal(t, tc.from, from)
		assert.Equal(t, tc.words, words)
	}
	for _, r := range []string{"", "the harness took it", "the session replied (from nobody"} {
		_, _, ok := ReplyOf(r)
		assert.False(t, ok, r)
	}
}
