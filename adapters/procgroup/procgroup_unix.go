//go:build linux || darwin

package procgroup

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started command and the process group it is in. Build it
// with Start; its methods are safe for concurrent use. Call Close once the
// command has been waited for.
type Group struct {
	cmd *exec.Cmd
	// pgid is the group's id: the guard's pid when a guard heads the
	// group, the command's own pid without one.
	pgid int
	// guard is the guard's process, nil without one; tie is the write end
	// of its stdin; ready is closed once the guard ignores the signals
	// Terminate sends (or has ended).
	guard *exec.Cmd
	tie   *os.File
	ready chan struct{}
	// mu orders signals with Close: once the guard is reaped (Close), its
	// pid, the group's id, may be anyone's, and nothing is sent to it.
	mu     sync.Mutex
	closed bool
}

func newGroup(cmd *exec.Cmd) *Group { return &Group{cmd: cmd} }

// start starts the guard first, as the head of a new process group, and
// then the command in that group: from the command's first instruction
// this process's death ends it. (The guard used to join the command's
// group after the command had started; this process killed in between, a
// window as long as a /bin/sh's start, left the command running without a
// parent.) Where no guard can start, the command heads its own group,
// unguarded.
func (g *Group) start() error {
	if g.cmd.SysProcAttr == nil {
		g.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	g.cmd.SysProcAttr.Setpgid = true
	g.cmd.SysProcAttr.Pgid = 0
	g.startGuard()
	if g.guard != nil {
		g.cmd.SysProcAttr.Pgid = g.guard.Process.Pid
	}
	if err := g.cmd.Start(); err != nil {
		g.Close()
		return err
	}
	if started != nil {
		started(g.cmd.Process.Pid)
	}
	if g.guard == nil {
		g.pgid = g.cmd.Process.Pid
	}
	return nil
}

// started, when set (by tests only), is called right after the command has
// started: a test can kill this process there.
var started func(pid int)

// guardProgram is the guard's whole program. It first ignores the signals
// that end a group gently (Terminate's SIGTERM reaches the guard too, as a
// member of the group: without this it died there, and a command that
// ignores SIGTERM outlived this process when this process was killed
// before it could follow with SIGKILL) and SIGPIPE, then says so with one
// line on stdout. Its stdin is a pipe whose only writer is this process
// and that nothing is ever written to: read returns once this process has
// ended, however it ended (SIGKILL included: the kernel closes its
// descriptors), and the guard then kills its own process group, the
// command's (kill with pid 0).
//
// SIGPIPE is ignored because the line's reader is this process: killed
// before the guard wrote it, the write found no reader, and the guard died
// of SIGPIPE there instead of ending the group, leaving the command
// running without a parent. The write now fails and the guard goes on.
// guardPause (tests only) delays the line, to kill this process first.
func guardProgram() string {
	return "trap '' HUP INT QUIT TERM PIPE; " + guardPause + "echo; read x; kill -KILL 0"
}

// guardPause is empty but in tests (see guardProgram).
var guardPause string

// guardReadyWait bounds how long Terminate waits for the guard to ignore
// its signal (a shell's start: milliseconds).
const guardReadyWait = 10 * time.Second

// startGuard ties the group's life to this process's: a /bin/sh running
// guardProgram heads the group, so that when this process dies without
// ending the group (kill -9, a crash) the guard ends it, grandchildren
// included. It works wherever /bin/sh does (Linux, macOS); where it cannot
// start, g.guard stays nil and the group runs unguarded, ended as before
// by Kill, Terminate and the caller's deadline.
func (g *Group) startGuard() {
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
	guard := exec.Command("/bin/sh", "-c", guardProgram())
	guard.Stdin, guard.Stdout, guard.Env = r, readyW, []string{}
	guard.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := guard.Start(); err != nil {
		_ = w.Close()
		_ = readyR.Close()
		return
	}
	g.guard, g.pgid, g.tie, g.ready = guard, guard.Process.Pid, w, make(chan struct{})
	go func() {
		// Its line, or EOF when it ended first.
		_, _ = readyR.Read(make([]byte, 1))
		_ = readyR.Close()
		close(g.ready)
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
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_ = unix.Kill(-g.pgid, sig)
	}
	if g.cmd.Process != nil {
		_ = g.cmd.Process.Signal(sig)
	}
}

// Close releases what the group holds: the guard's pipe, whose end makes
// the guard kill whatever is left of the group (nothing, after Kill), and
// the guard, reaped. Signals after Close reach the command only.
func (g *Group) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	if g.guard == nil {
		return
	}
	_ = g.tie.Close()
	_ = g.guard.Wait()
}
