package sshhost

import (
	"strings"

	"github.com/peerctl/peerctl/domain"
)

// CommandLine is words as one remote command line, each ShellQuote'd,
// joined by spaces: what ssh hands the far side's login shell (`sh -c
// LINE`). Nothing in a word is expanded there.
func CommandLine(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = domain.ShellQuote(w)
	}
	return strings.Join(quoted, " ")
}
