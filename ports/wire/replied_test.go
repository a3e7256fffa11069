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

// TestFarHeadReadsBack: a far change's reason is read back for its node
// only, with its id there (0: none named) and the reason there; another
// node's, or a reason not so headed, is not.
func TestFarHeadReadsBack(t *testing.T) {
	for _, tc := range []struct {
		where string
		id    int64
		rest  string
	}{
		{"nats:lima", 3, "the harness took it (delivered)"},
		{"nats:lima", 0, "stored"},
		{"nats:a.b", 9223372036854775807, "on nats:x (message 2 there): y"},
		{"nats:<b>\x1b[2J", 12, ""},
	} {
		id, rest, ok := FarOf(FarHead(tc.where, tc.id)+tc.rest, tc.where)
		assert.True(t, ok, tc.where)
		assert.Equal(t, tc.id, id)
		assert.Equal(t, tc.rest, rest)
	}
	for _, r := range []string{"", "stored", "on nats:lima2 (message 3 there): x", "on nats:lima (message 03 there): x",
		"on nats:lima (message -3 there): x", "on nats:lima (message 3): x", "on nats:limax"} {
		_, _, ok := FarOf(r, "nats:lima")
		assert.False(t, ok, r)
	}
}
