package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrintableJSON(t *testing.T) {
	for in, want := range map[string]string{
		`"plain ünï 名前 🚀"`:       `"plain ünï 名前 🚀"`,
		"\"a\x7fb\"":             `"a\u007fb"`,
		"\"\u0085\u009b\"":       `"\u0085\u009b"`,
		"\"\u202e\u200b\ufeff\"": `"\u202e\u200b\ufeff"`,
		"\"\u00a0\"":             `"\u00a0"`,
		"\"\U000e0001\"":         `"\udb40\udc01"`,
	} {
		got := printableJSON([]byte(in))
		assert.Equal(t, want, string(got), "printableJSON(%q)", in)
		var a, b string
		require.NoError(t, json.Unmarshal([]byte(in), &a))
		require.NoError(t, json.Unmarshal(got, &b))
		assert.Equal(t, a, b, "the same value")
	}
}

// Printed takes a document as EncodeJSON writes it and nothing a
// terminal would act on.
func TestPrinted(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, EncodeJSON(&b, []Session{{Name: "api\x1b[2J\u202e ünï", Cwd: "/w"}}, "  ", false))
	assert.True(t, Printed(b.Bytes()))
	for _, bad := range []string{
		"", "[]", "[\n", "{\"a\":\"x\u202ey\"}\n", "{\"a\":\"x\x1b[2Jy\"}\n", "[\r\n]\n", "[\t1]\n", "{\"a\":\"\xff\"}\n", "{\"a\":\"\u0085\"}\n",
	} {
		assert.False(t, Printed([]byte(bad)), "%q", bad)
	}
}
