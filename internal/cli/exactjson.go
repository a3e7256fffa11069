package cli

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// inexactJSON says where the JSON text data holds a string that
// encoding/json would not decode byte for byte: bytes that are not UTF-8,
// or a \uD800–\uDFFF escape that is not half of a surrogate pair. The
// decoder silently turns both into U+FFFD, so a message read from a relay
// line or an MCP call would reach its session changed; the CLI refuses
// such a text (invalid_message), and so must they. "" when data is exact.
// data must be valid JSON (a backslash then only occurs inside strings).
func inexactJSON(data []byte) string {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return fmt.Sprintf("bytes that are not UTF-8 (first bad byte at offset %d)", i)
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if i+1 < len(data) && data[i+1] == 'u' {
			r, ok := hex4(data, i+2)
			if ok && utf16.IsSurrogate(r) {
				low, lok := rune(0), false
				if r < 0xDC00 && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					low, lok = hex4(data, i+8)
				}
				if !lok || low < 0xDC00 || low > 0xDFFF {
					return fmt.Sprintf("an unpaired UTF-16 surrogate escape %s at offset %d (not valid UTF-8 once decoded)", data[i:i+6], i)
				}
				i += 6
			}
		}
		i++ // skip the escaped character
	}
	return ""
}

// hex4 reads the four hex digits at data[i:i+4] as a rune.
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	return rune(v), err == nil
}
