package claudecode

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/domain"
)

// TestDoctorCourierRunFailsOnItsOwnLine: a claude that is found, answers
// and has every flag, whose courier run fails, is a problem on the
// "courier" line; the "claude" line says the program is fine.
func TestDoctorCourierRunFailsOnItsOwnLine(t *testing.T) {
	probe := courierexec.ProgramProbe{Program: "claude", Path: "/opt/claude", Version: "2.1.332 (Claude Code)", Flags: []string{"-p"},
		Courier: &courierexec.CourierProbe{Err: errors.New("the courier never reached peerctl's endpoint within 30s")}}
	row := doctorRow(probe, true)
	assert.Equal(t, domain.HealthFail, row.Health)
	require.Len(t, row.Problems, 1)
	require.Len(t, row.Lines, 2)
	assert.Equal(t, "claude", row.Lines[0].Check)
	assert.Equal(t, "ok", row.Lines[0].Health, "the program itself is fine: %s", row.Lines[0].Text)
	assert.Equal(t, "/opt/claude (Claude Code 2.1.332); courier flags: 1 of 1 present", row.Lines[0].Text,
		"its version said plainly, no parenthesis inside another")
	assert.Equal(t, "courier", row.Lines[1].Check)
	assert.Equal(t, "fail", row.Lines[1].Health)

	// A program that cannot run fails on its own line.
	probe = courierexec.ProgramProbe{Program: "claude", Path: "/opt/claude", Err: errors.New("run /opt/claude --version: exit status 3")}
	row = doctorRow(probe, true)
	assert.Equal(t, "fail", row.Lines[0].Health)
}
