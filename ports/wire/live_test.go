package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckLiveTakesWhatListPrintsOnly(t *testing.T) {
	good := Session{PID: 7, Status: "waiting", SessionID: "0b6c1f7e-1111-2222-3333-444455556666", StartedAt: "2026-12-06T10:00:00.123Z"}
	assert.NoError(t, CheckLive(good))
	noStart := good
	noStart.StartedAt, noStart.SessionID = "", ""
	assert.NoError(t, CheckLive(noStart), "startedAt and sessionId may be unknown")
	for _, mod := range []func(*Session){
		func(s *Session) { s.PID = 0 },
		func(s *Session) { s.Status = "" },
		func(s *Session) { s.Status = "Idle" },
		func(s *Session) { s.SessionID = "a\nb" },
		func(s *Session) { s.SessionID = strings.Repeat("x", MaxSessionIDBytes+1) },
		func(s *Session) { s.StartedAt = "2026-12-06 10:00:00" },
	} {
		s := good
		mod(&s)
		err := CheckLive(s)
		if assert.Error(t, err, "%+v", s) {
			assert.Equal(t, Safe(err.Error()), err.Error(), "printable, quoted once")
		}
	}
}
