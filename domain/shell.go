package domain

import "strings"

// ShellQuote writes word for a POSIX shell as one single-quoted word:
// every byte stands for itself between single quotes, and a single quote
// is written as below (end the quote, an escaped quote, start again).
// Nothing in it is expanded, substituted or split by sh, dash, bash, ksh
// or zsh: $(...), backticks, semicolons, newlines and globs are data. The
// empty word is two single quotes.
//
//	a'b  →  'a'\''b'
func ShellQuote(word string) string {
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// ShellWord is word as a POSIX shell reads it back as that one word: as it
// is when it holds only characters no shell gives a meaning to (letters,
// digits and @%+=:,./_-), else ShellQuote'd. Every word of a command
// peerctl suggests (ShellCommand) is written so: a DEST, an address or a
// name from another machine pasted back runs nothing.
func ShellWord(word string) string {
	if word != "" && !strings.ContainsFunc(word, notPlain) {
		return word
	}
	return ShellQuote(word)
}

// ShellCommand is words as one command line to paste into a shell, each a
// ShellWord, joined by spaces.
func ShellCommand(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = ShellWord(w)
	}
	return strings.Join(out, " ")
}

func notPlain(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("@%+=:,./_-", r)
}
