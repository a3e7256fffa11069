//go:build linux || darwin

package procgroup

import (
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started command and the process group it heads. Build it
// with Start; its methods are safe for concurrent use. Call Close once the
// command has been waited for.
type Group struct {
	cmd *exec.Cmd
	// tie is the write end of the guard's stdin, nil without a guard;
	// ready is closed once the guard ignores the signals Terminate sends
	// (or has ended); guarded is closed once the guard has been reaped.
	tie     *os.File
	ready   chan struct{}
	guarded chan struct{}
}

func newGroup(cmd *exec.Cmd) *Group { return &Group{cmd: cmd} }

func (g *Group) start() error {
	if g.cmd.SysProcAttr == nil {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	g.cmd.SysProcAttr.Setpgid = true
	g.cmd.SysProcAttr.Pgid = 0
	if err := g.cmd.Start(); err != nil {
		return err
	}
	g.guard()
	return nil
}

// guardProgram is the guard's whole program. It first ignores the signals
// that end a group gently (Terminate's SIGTERM reaches the guard too, as a
// member of the group: without this it died there, and a command that
// ignores SIGTERM outlived this process when this process was killed
// before it could follow with SIGKILL), then says so with one line on
// stdout. Its stdin is a pipe whose only writer is this process and that
// nothing is ever written to: read returns once this process has ended,
// however it ended (SIGKILL included: the kernel closes its descriptors),
// and the guard then kills its own process group, the command's (kill
// with pid 0).
const guardProgram = "trap '' HUP INT QUIT TERM; echo; read x; kill -KILL 0"

// guardReadyWait bounds how long Terminate waits for the guard to ignore
// its signal (a shell's start: milliseconds).
const guardReadyWait = 10 * time.Second

// guard ties the group's life to this process's: a /bin/sh running
// guardProgram joins the group, so that when this process dies without
// ending the group (kill -9, a crash) the guard ends it, grandchildren
// included. It works wherever /bin/sh does (Linux, macOS); where it cannot
// start, the group runs unguarded, ended as before by Kill, Terminate and
// the caller's deadline.
func (g *Group) guard() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		_ = w.Close()
		return
	}
	defer readyW.Close()
	guard := exec.Command("/bin/sh", "-c", guardProgram)
	guard.Stdin, guard.Stdout, guard.Env = r, readyW, []string{}
	guard.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pid()}
	if err := guard.Start(); err != nil {
		_ = w.Close()
		_ = readyR.Close()
		return
	}
	g.tie, g.ready, g.guarded = w, make(chan struct{}), make(chan struct{})
	go func() {
		// Its line, or EOF when it ended first.
		_, _ = readyR.Read(make([]byte, 1))
		_ = readyR.Close()
		close(g.ready)
	}()
	go func() {
		_ = guard.Wait()
		close(g.guarded)
	}()
}

// Terminate asks the whole group to end: SIGTERM to the process group and,
// should the group be gone or never have formed, to the head itself. The
// guard ignores it (see guardProgram): a group that does not end on
// SIGTERM is still ended should this process die before a Kill.
func (g *Group) Terminate() {
	if g.ready != nil {
		select {
		case <-g.ready:
		case <-time.After(guardReadyWait):
		}
	}
	g.signal(unix.SIGTERM)
}

// Kill ends the whole group now: SIGKILL to the process group and to the
// head itself.
func (g *Group) Kill() { g.signal(unix.SIGKILL) }

func (g *Group) signal(sig syscall.Signal) {
	pid := g.Pid()
	_ = unix.Kill(-pid, sig)
	_ = g.cmd.Process.Signal(sig)
}

// Close releases what the group holds: the guard's pipe, whose end makes
// the guard kill whatever is left of the group (nothing, after Kill), and
// the guard, reaped.
func (g *Group) Close() {
	if g.tie == nil {
		return
	}
	_ = g.tie.Close()
	<-g.guarded
}
