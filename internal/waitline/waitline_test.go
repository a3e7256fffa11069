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

// A stage's live line: no head line, what goes on and for how long,
// rewritten in place and cleared at the end.
func TestLiveAloneDrawsThenClears(t *testing.T) {
	var s testproc.Buffer
	l := Live(&s, "starting the courier (claude -p)")
	require.Eventually(t, func() bool { return strings.Contains(s.String(), "starting") }, time.Minute, 10*time.Millisecond)
	l.Stop()
	out := s.String()
	assert.Regexp(t, `^(\r\x1b\[Kpeerctl: starting the courier \(claude -p\): \d+s)+\r\x1b\[K$`, out)
	l.Stop()
	assert.Equal(t, out, s.String(), "nothing after the end")
}

func TestNilLineDoesNothing(t *testing.T) {
	var l *Line
	l.Say("x")
	l.Stop()
}
