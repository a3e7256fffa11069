package waitline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testproc"
)

// Not a terminal: the head line and what is said, whole lines, nothing
// rewritten in place.
func TestNotLiveIsLinesAlone(t *testing.T) {
	var s testproc.Buffer
	l := Start(&s, false, "peerctl: waiting", time.Minute)
	l.Say("peerctl: note: x")
	l.Stop()
	l.Stop()
	assert.Equal(t, "peerctl: waiting\npeerctl: note: x\n", s.String())
}

// On a terminal: the time waited, rewritten in place; a line said
// meanwhile stands on its own line with the time drawn again below it;
// at the end the time is cleared.
func TestLiveRewritesAndClears(t *testing.T) {
	var s testproc.Buffer
	l := Start(&s, true, "peerctl: waiting", time.Minute)
	require.Eventually(t, func() bool { return strings.Contains(s.String(), "waited") }, time.Minute, 10*time.Millisecond)
	l.Say("peerctl: note: x")
	l.Stop()
	out := s.String()
	assert.True(t, strings.HasPrefix(out, "peerctl: waiting\n"+clear+"peerctl: waited "), "%q", out)
	assert.Contains(t, out, clear+"peerctl: note: x\n"+clear+"peerctl: waited ", "%q", out)
	assert.True(t, strings.HasSuffix(out, clear), "cleared at the end: %q", out)
	assert.Contains(t, out, " of 1m0s")
	l.Say("after")
	assert.True(t, strings.HasSuffix(s.String(), clear+"after\n"), "nothing drawn after the end: %q", s.String())
}

func TestNilLineDoesNothing(t *testing.T) {
	var l *Line
	l.Say("x")
	l.Stop()
}
