package sshhost

import "strings"

// Quote writes word for a POSIX shell as one single-quoted word: every
// byte stands for itself between single quotes, and a single quote is
// written as below (end the quote, an escaped quote, start again). Nothing
// in it is expanded, substituted or split by sh, dash, bash, ksh or zsh:
// $(...), backticks, semicolons, newlines and globs are data. The empty
// word is two single quotes.
//
//	a'b  →  'a'\''b'
func Quote(word string) string {
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// CommandLine is words as one remote command line, each Quoted, joined by
// spaces: what ssh hands the far side's login shell (`sh -c LINE`).
func CommandLine(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = Quote(w)
	}
	return strings.Join(quoted, " ")
}
