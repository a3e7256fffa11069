package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Claude Code's status words, "waiting" among them (a session stopped on
// its user: a dialog, a prompt), each read back as itself; any other word
// is unknown.
func TestParseStatusWords(t *testing.T) {
	for _, s := range []Status{StatusIdle, StatusBusy, StatusWaiting} {
		assert.Equal(t, s, ParseStatus(s.String()))
	}
	assert.Equal(t, StatusUnknown, ParseStatus("thinking"))
	assert.Equal(t, "unknown", StatusUnknown.String())
}

func TestStatusText(t *testing.T) {
	assert.Equal(t, "waiting (dialog open)", StatusText("waiting", "dialog open"))
	assert.Equal(t, "waiting", StatusText("waiting", ""))
	assert.Equal(t, "idle", StatusText("idle", "dialog open"), "only a waiting session waits on something")
}
