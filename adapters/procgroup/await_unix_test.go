//go:build linux || darwin

package procgroup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// AwaitExit leaves the head unreaped: its pid still answers kill(pid, 0) until exec.Cmd.Wait reaps it.
func TestAwaitExitLeavesTheHeadUnreaped(t *testing.T) {
	g, cmd, _, _ := tree(t, "parent")
	g.AwaitExit()
	assert.NoError(t, unix.Kill(g.Pid(), 0), "the exited head is still a zombie of ours")
	g.Kill()
	_ = cmd.Wait()
	assert.ErrorIs(t, unix.Kill(g.Pid(), 0), unix.ESRCH, "Wait reaped it")
}
