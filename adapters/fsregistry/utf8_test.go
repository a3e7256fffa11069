package fsregistry

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplaceInvalidUTF8 follows the Unicode Standard's "U+FFFD
// substitution of maximal subparts" (chapter 3.9, tables 3-8 to 3-11),
// which the WHATWG decoder Claude Code reads files with applies.
func TestReplaceInvalidUTF8(t *testing.T) {
	const r = "\uFFFD"
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"ünï 日本 😀", "ünï 日本 😀"},
		// Table 3-8.
		{"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" + r + r + r + "b" + r + "c" + r + r + "d"},
		// Table 3-9: non-shortest forms, each byte replaced.
		{"\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41", r + r + r + r + r + r + r + r + "A"},
		// Table 3-10: surrogates (ED A0..BF) and beyond U+10FFFF (F4 90+).
		{"\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41", r + r + r + r + r + r + r + r + "A"},
		{"\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42", r + r + r + r + r + "A" + r + r + "B"},
		// Table 3-11: truncated sequences, one each.
		{"\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", r + r + r + r + "A"},
		// What a break-it pass measured against Claude Code 2.1.332.
		{"a\xE2\x82b", "a" + r + "b"},
		{"a\xF0\x9F\x98b", "a" + r + "b"},
		{"a\xEFb", "a" + r + "b"},
		{"end\xF0\x9F", "end" + r},
	}
	for _, tt := range tests {
		got := replaceInvalidUTF8([]byte(tt.in))
		assert.Equal(t, tt.want, string(got), "%q", tt.in)
	}
}

func TestParseReplacesInvalidUTF8AsClaudeCodeDoes(t *testing.T) {
	a, err := Parse([]byte("{\"pid\":7,\"name\":\"a\xE2\x82b\"}"))
	require.NoError(t, err)
	b, err := Parse([]byte("{\"pid\":8,\"name\":\"a\xEFb\"}"))
	require.NoError(t, err)
	assert.Equal(t, "a\uFFFDb", a.Name)
	assert.Equal(t, a.Name, b.Name, "one name to Claude Code, so one name here: the identity rule sees them shared")
}

// FuzzReplaceInvalidUTF8: the result is valid UTF-8, valid input is kept
// as it is, and each valid character of the input survives in order.
func FuzzReplaceInvalidUTF8(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "a\xE2\x82b", "\xF0\x9F\x98\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := replaceInvalidUTF8(in)
		require.True(t, utf8.Valid(got))
		if utf8.Valid(in) {
			require.Equal(t, string(in), string(got))
		}
		// Never more replacement characters than Go's one per byte.
		assert.LessOrEqual(t, utf8.RuneCount(got), utf8.RuneCount(in))
	})
}
