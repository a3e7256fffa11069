package fsregistry

import "unicode/utf8"

// replaceInvalidUTF8 returns b with each ill-formed UTF-8 sequence replaced
// by U+FFFD the way the WHATWG UTF-8 decoder does (the Unicode Standard's
// "U+FFFD substitution of maximal subparts", chapter 3.9): one U+FFFD for
// each maximal prefix of a well-formed sequence, and one for each other
// bad byte. Claude Code reads its registry files with that decoder, so two
// names Claude Code sees as one are one here too (encoding/json alone
// would give one U+FFFD per bad byte). Valid input is returned as is.
func replaceInvalidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		// The sequence's length and the range of its second byte
		// (Unicode Table 3-7, well-formed UTF-8 byte sequences).
		n, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			n = 2
		case c == 0xE0:
			n, lo = 3, 0xA0
		case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
			n = 3
		case c == 0xED:
			n, hi = 3, 0x9F
		case c == 0xF0:
			n, lo = 4, 0x90
		case c >= 0xF1 && c <= 0xF3:
			n = 4
		case c == 0xF4:
			n, hi = 4, 0x8F
		}
		if n == 0 { // not a lead byte
			out = append(out, "\uFFFD"...)
			i++
			continue
		}
		j := i + 1
		for k := 1; k < n && j < len(b); k++ {
			if k == 1 && (b[j] < lo || b[j] > hi) || k > 1 && (b[j] < 0x80 || b[j] > 0xBF) {
				break
			}
			j++
		}
		if j-i == n {
			out = append(out, b[i:j]...)
		} else {
			out = append(out, "\uFFFD"...) // the maximal subpart b[i:j]
		}
		i = j
	}
	return out
}
