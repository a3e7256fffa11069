package livecc

import (
	"strconv"
	"unicode/utf16"
)

// MaxSlugLen is the longest project folder name Claude Code writes before it
// shortens the name and appends a hash (measured on 2.1.328).
const MaxSlugLen = 200

// Slug is the folder name Claude Code gives a working directory under
// <config>/projects/ (measured on 2.1.328, see docs/CLAUDE-CODE-FACTS.md):
//
//   - every UTF-16 code unit of cwd that is not an ASCII letter or digit
//     becomes '-' (so "ü" gives one '-', an emoji outside the BMP gives two);
//   - when that is longer than MaxSlugLen units, it is cut to MaxSlugLen and
//     "-" + base-36 of |h| is appended, where h is the 32-bit Java-style string
//     hash (h = 31*h + unit, wrapping) of the original cwd's UTF-16 code units.
func Slug(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	out := make([]byte, len(units))
	var h int32
	for i, u := range units {
		h = 31*h + int32(u)
		if u < 0x80 && ('a' <= u && u <= 'z' || 'A' <= u && u <= 'Z' || '0' <= u && u <= '9') {
			out[i] = byte(u)
		} else {
			out[i] = '-'
		}
	}
	if len(out) <= MaxSlugLen {
		return string(out)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(out[:MaxSlugLen]) + "-" + strconv.FormatInt(abs, 36)
}
