package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInexactJSON(t *testing.T) {
	exact := []string{
		`{"text":"plain"}`,
		`{"text":"pair \ud83d\ude00 ok"}`,
		`{"text":"\uD83D\uDE00"}`,
		`{"text":"escaped backslash \\ud800 is text"}`,
		`{"text":"é and \u00e9 and \ufffd stated on purpose"}`,
		`{"text":"\\\\","n":1}`,
	}
	for _, s := range exact {
		assert.Empty(t, inexactJSON([]byte(s)), s)
	}
	inexact := map[string]string{
		"{\"text\":\"bad \xff\xfe\"}":       "bytes that are not UTF-8 (first bad byte at offset 13)",
		`{"text":"lone \ud800 high"}`:       `unpaired UTF-16 surrogate escape \ud800 at offset 14`,
		`{"text":"lone \udc00 low"}`:        `unpaired UTF-16 surrogate escape \udc00 at offset 14`,
		`{"text":"high then text \ud83dx"}`: `\ud83d at offset 24`,
		`{"text":"two highs \ud83d\ud83d"}`: `\ud83d at offset 19`,
		`{"text":"at the end \ud83d"}`:      `\ud83d at offset 20`,
	}
	for s, want := range inexact {
		assert.Contains(t, inexactJSON([]byte(s)), want, s)
	}
}
