package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSafeText(t *testing.T) {
	for in, want := range map[string]string{
		"pong: ünï 🚀\n\tsecond line": "pong: ünï 🚀\n\tsecond line",
		"red \x1b[31mtext\x1b[0m":    `red \x1b[31mtext\x1b[0m`,
		"cr\rbell\a del\x7f":         `cr\rbell\a del\x7f`,
		"bad \xff utf8":              `bad \xff utf8`,
		"bidi \u202e override":       `bidi \u202e override`,
		"":                           "",
		// A backslash is itself only when nothing is escaped; once
		// anything is, every backslash is doubled, so that a literal
		// \x1b and a real ESC never print the same.
		`lit \x1b and C:\dir`: `lit \x1b and C:\dir`,
		"lit \\x1b real \x1b": `lit \\x1b real \x1b`,
		"C:\\dir\a":           `C:\\dir\a`,
	} {
		assert.Equal(t, want, SafeText(in), "%q", in)
	}
}
