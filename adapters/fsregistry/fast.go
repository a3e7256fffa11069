package fsregistry

import (
	"bytes"
	"unicode/utf8"
)

// Fast paths. Each one handles the common case (a string without escapes, a
// number literal) with fewer allocations and gives exactly what the general
// path would; anything else goes to the general path, which alone words the
// problems.

// fastString returns the value of the JSON string literal raw when it
// needs no decoding (no escapes, valid UTF-8): what json.Unmarshal into a
// string gives. raw must be one valid JSON value (a json.RawMessage taken
// from a document that decoded).
func fastString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	// Every byte is looked at: an escape can follow non-ASCII text.
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// fastNumber returns the text of the JSON number literal raw: what
// json.Unmarshal into a json.Number gives. raw must be one valid JSON value.
func fastNumber(raw []byte) (string, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return "", false
	}
	return string(raw), true
}
