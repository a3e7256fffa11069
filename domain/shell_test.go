package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
)

func TestShellWord(t *testing.T) {
	for word, want := range map[string]string{
		"box":                   "box",
		"me@build-3":            "me@build-3",
		"proj-89":               "proj-89",
		"cc-peer:v1:5:n:/s":     "cc-peer:v1:5:n:/s",
		"":                      "''",
		"a'; touch /tmp/pwn; '": `'a'\''; touch /tmp/pwn; '\'''`,
		"$(touch${IFS}/tmp/p)":  `'$(touch${IFS}/tmp/p)'`,
		"`id`":                  "'`id`'",
		"~root":                 "'~root'",
		"a*":                    "'a*'",
		"a\nb":                  "'a\nb'",
		"é":                     "'é'",
	} {
		assert.Equal(t, want, domain.ShellWord(word), word)
	}
	assert.Equal(t, `peerctl show --host box 'a b'`, domain.ShellCommand("peerctl", "show", "--host", "box", "a b"))
}
