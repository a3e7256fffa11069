package domain

import (
	"strconv"
	"strings"
)

// AndList joins words as a sentence does: "a", "a and b", "a, b and c".
func AndList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// Count is n and word, plural but for one: "1 session", "0 sessions"
// (word's plural adds an s).
func Count(n int, word string) string {
	if n == 1 {
		return strconv.Itoa(n) + " " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
