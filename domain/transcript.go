package domain

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
)

// MaxProjectSlug is the longest project folder name Claude Code writes
// before it shortens the name and appends a hash (measured on 2.1.328).
const MaxProjectSlug = 200

// ProjectSlug turns a session's cwd into the folder name Claude Code uses
// under <config dir>/projects/ (measured on Claude Code 2.1.328):
//
//   - every UTF-16 code unit of cwd that is not an ASCII letter or digit
//     becomes '-' (so "ü" gives one '-', an emoji outside the BMP two);
//   - a result longer than MaxProjectSlug units is cut to MaxProjectSlug and
//     gets "-" plus the base-36 absolute value of the 32-bit Java-style string
//     hash of cwd (h = 31*h + unit, wrapping, over its UTF-16 code units).
func ProjectSlug(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	out := make([]byte, len(units))
	var h int32
	for i, u := range units {
		h = 31*h + int32(u)
		if 'a' <= u && u <= 'z' || 'A' <= u && u <= 'Z' || '0' <= u && u <= '9' {
			out[i] = byte(u)
		} else {
			out[i] = '-'
		}
	}
	if len(out) <= MaxProjectSlug {
		return string(out)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(out[:MaxProjectSlug]) + "-" + strconv.FormatInt(abs, 36)
}

// TranscriptPath is where Claude Code keeps a session's transcript:
// <configDir>/projects/<ProjectSlug(cwd)>/<sessionID>.jsonl. It returns ""
// when cwd or sessionID is unknown or sessionID could escape the folder.
func TranscriptPath(configDir, cwd, sessionID string) string {
	if configDir == "" || cwd == "" || sessionID == "" || strings.ContainsAny(sessionID, `/\`) || sessionID == "." || sessionID == ".." {
		return ""
	}
	return filepath.Join(configDir, "projects", ProjectSlug(cwd), sessionID+".jsonl")
}

// CarriesText reports whether a transcript's enqueue content is text as
// sent: the text itself (an inbox-socket post), or the text wrapped as a
// message from another session, which is how a SendMessage send is queued
// (Claude Code 2.1.328 and 2.1.332):
//
//	<cross-session-message from="uds:<sender socket>" from-name="<sender name>" from-mode="…">
//	<text, escaped as by EscapeWrapperTags>
//	</cross-session-message>
func CarriesText(content, text string) bool {
	if content == text {
		return true
	}
	const open, end = "<cross-session-message from=\"", "\n</cross-session-message>"
	body, ok := strings.CutPrefix(content, open)
	if !ok {
		return false
	}
	header, body, ok := strings.Cut(body, "\n")
	if !ok || !strings.HasSuffix(header, "\">") {
		return false
	}
	return body == EscapeWrapperTags(text)+end
}

// EscapeWrapperTags is the one change Claude Code makes to a text it wraps
// as a cross-session message, so that the text can neither open nor close
// a wrapper: "<cross-session-message" becomes "<\cross-session-message" and
// "</cross-session-message" becomes "<\/cross-session-message" (measured
// live on 2.1.328 and 2.1.332, docs/CLAUDE-CODE-FACTS.md).
func EscapeWrapperTags(text string) string {
	return wrapperTags.Replace(text)
}

var wrapperTags = strings.NewReplacer("<cross-session-message", `<\cross-session-message`, "</cross-session-message", `<\/cross-session-message`)
