//go:build linux || darwin

package procgroup

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Group is a started command and the process group it heads. Build it
// with Start; its methods are safe for concurrent use. Call Close once the
// command has been waited for.
type Group struct {
	cmd *exec.Cmd
}

func newGroup(cmd *exec.Cmd) *Group { return &Group{cmd: cmd} }

func (g *Group) start() error {
	if g.cmd.SysProcAttr == nil {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	g.cmd.SysProcAttr.Setpgid = true
	g.cmd.SysProcAttr.Pgid = 0
	return g.cmd.Start()
}

// Terminate asks the whole group to end: SIGTERM to the process group and,
// should the group be gone or never have formed, to the head itself.
func (g *Group) Terminate() { g.signal(unix.SIGTERM) }

// Kill ends the whole group now: SIGKILL to the process group and to the
// head itself.
func (g *Group) Kill() { g.signal(unix.SIGKILL) }

func (g *Group) signal(sig syscall.Signal) {
	pid := g.Pid()
	_ = unix.Kill(-pid, sig)
	_ = g.cmd.Process.Signal(sig)
}

// Close releases what the group holds (nothing on unix).
func (g *Group) Close() {}
