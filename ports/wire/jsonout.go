package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// EncodeJSON writes v to w as one JSON value and a newline, the way every
// JSON document and line of peerctl is written: indent "" is compact;
// escapeHTML writes <, > and & as \u003c, \u003e, \u0026. On top of
// encoding/json (which escapes the C0 controls, U+2028 and U+2029), every
// other character that is not printable — DEL, the C1 controls, bidi and
// other format characters, spaces other than the ASCII space — is written
// \uXXXX too (printableJSON): the same value, but a registry name cannot
// put an escape sequence or a direction override on a screen that shows
// the JSON as it is.
func EncodeJSON(w io.Writer, v any, indent string, escapeHTML bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(printableJSON(buf.Bytes()))
	return err
}

// printableJSON rewrites, in JSON text as encoding/json writes it, every
// character that is not printable (strconv.IsPrint) and not ASCII
// whitespace or below U+0020 (those are JSON's own, or escaped already) as
// \uXXXX, a surrogate pair above U+FFFF. Outside strings encoding/json
// writes ASCII only, so every such character is inside a string, and its
// escape is the same value.
func printableJSON(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		if b[i] < 0x7f {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && strconv.IsPrint(r) {
			out = append(out, b[i:i+size]...)
		} else if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// Printed reports whether b is one JSON value and its newline as
// EncodeJSON writes them: valid JSON, no control character but the
// newlines of its indentation, every other character printable (as
// printableJSON leaves it). A document from elsewhere (the service's
// answer) that is Printed can go to stdout as it is.
func Printed(b []byte) bool {
	if len(b) == 0 || b[len(b)-1] != '\n' || !json.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' {
			return false
		}
	}
	return bytes.Equal(printableJSON(b), b)
}
