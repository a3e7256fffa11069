// Package procgroup starts a command as the head of its own group of
// processes and ends the whole group, so that nothing a child started
// outlives the call that started it.
//
// The group is a process group on unix, guarded: a /bin/sh started first
// heads it and the command joins it (setpgid in the child), so from the
// command's first instruction the guard kills the group when this process
// dies without ending it, even by SIGKILL; it ignores Terminate's SIGTERM;
// see Group.startGuard. Where no /bin/sh starts, the command heads its own
// group, unguarded. It is a Job Object on Windows (the child starts
// suspended, joins the job, then resumes, so even its first grandchild is in
// the job; the job ends with TerminateJobObject and dies with its last
// handle, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: this process holds the only
// one, so the job also dies with this process).
//
// AwaitExit waits for the head to exit without reaping it where the OS
// allows: waitid(P_PID, WEXITED|WNOWAIT) on Linux, kqueue EVFILT_PROC
// NOTE_EXIT on darwin (which has no waitid in golang.org/x/sys/unix). The
// process group's id stays taken until Close (the guard's pid, reaped by
// Close) or, unguarded, until exec.Cmd.Wait reaps the head, so a Kill after
// AwaitExit cannot reach a stranger's group. On Windows the job is bound to
// a handle, not to a pid.
//
// The package builds for linux, darwin and windows.
package procgroup

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// ErrNotStarted is returned by Start for a cmd that has already started.
var ErrNotStarted = errors.New("procgroup: command already started")

// Run starts cmd as the head of a new group, waits for it, and kills the
// whole group when ctx ends first and, once cmd has exited, whatever is
// left of it: nothing it started outlives the call. The error is
// cmd.Wait's, wrapped with ctx's error when ctx ended first.
func Run(ctx context.Context, cmd *exec.Cmd) error {
	g, err := Start(cmd)
	if err != nil {
		return err
	}
	defer g.Close()
	stop := context.AfterFunc(ctx, g.Kill)
	err = cmd.Wait()
	stop()
	g.Kill()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// Start starts cmd as the head of a new group (see the package doc). cmd's
// SysProcAttr is kept and extended. On error nothing is left running.
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.Process != nil {
		return nil, ErrNotStarted
	}
	g := newGroup(cmd)
	if err := g.start(); err != nil {
		return nil, err
	}
	return g, nil
}

// Pid returns the head's process id.
func (g *Group) Pid() int { return g.cmd.Process.Pid }
