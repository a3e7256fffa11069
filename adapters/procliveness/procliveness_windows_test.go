package procliveness

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

func TestCheckSelfIsLive(t *testing.T) {
	start, err := StartTime("", os.Getpid())
	require.NoError(t, err)
	ft, err := strconv.ParseUint(start, 10, 64)
	require.NoError(t, err)
	created := FiletimeTime(ft)
	assert.WithinDuration(t, time.Now(), created, 24*time.Hour, "a FILETIME, not .NET ticks")
	c := New()
	dom, err := c.Domain()
	require.NoError(t, err)
	l := c.Check(domain.Record{PID: os.Getpid(), ProcStart: start, PIDDomain: dom})
	assert.Equal(t, domain.Yes, l.Alive)
	assert.Equal(t, domain.Yes, l.StartMatches)
	assert.Equal(t, domain.Yes, l.DomainMatches)
}

func TestCheckExitedChildIsDead(t *testing.T) {
	cmd := exec.Command("cmd.exe", "/c", "exit 0")
	require.NoError(t, cmd.Run())
	l := New().Check(domain.Record{PID: cmd.Process.Pid})
	assert.Equal(t, domain.No, l.Alive)
	assert.True(t, ProcessGone(cmd.Process.Pid))
}

func TestParentOfSelf(t *testing.T) {
	ppid, err := NewTree("").Parent(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), ppid)
}
