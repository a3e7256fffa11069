package procliveness

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// StartTime on a Mac is the very text Claude Code's darwin build takes
// from ps (2.1.328): compared here with ps itself.
func TestStartTimeIsWhatPsPrints(t *testing.T) {
	ps := exec.Command("/bin/ps", "-o", "lstart=", "-p", strconv.Itoa(os.Getpid()))
	ps.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	out, err := ps.Output()
	require.NoError(t, err)
	got, err := StartTime("", os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), got)
}

func TestCheckSelfIsLive(t *testing.T) {
	start, err := StartTime("", os.Getpid())
	require.NoError(t, err)
	l := New().Check(domain.Record{PID: os.Getpid(), ProcStart: start, PIDDomain: DarwinPIDDomain})
	assert.Equal(t, domain.Yes, l.Alive)
	assert.Equal(t, domain.Yes, l.StartMatches)
	assert.Equal(t, domain.Yes, l.DomainMatches)
}

func TestCheckReapedChildIsDead(t *testing.T) {
	cmd := exec.Command("/usr/bin/true")
	require.NoError(t, cmd.Run())
	l := New().Check(domain.Record{PID: cmd.Process.Pid})
	assert.Equal(t, domain.No, l.Alive)
	_, err := StartTime("", cmd.Process.Pid)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestParentOfSelf(t *testing.T) {
	ppid, err := NewTree("").Parent(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), ppid)
}
