// Package testproc starts the helper processes tests use as the pid of a
// session record: one that lives until the test ends, one the test can
// end, and a pid that ran and is gone; CPU hogs that load the machine as
// a build beside it would; and Buffer, to read a running process's output.
package testproc

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// Sleeper starts a `sleep` child that lives until the test ends and
// returns its pid.
func Sleeper(t testing.TB) int {
	t.Helper()
	pid, _ := KillableSleeper(t)
	return pid
}

// KillableSleeper starts a `sleep` child that lives until the test ends or
// kill is called (killed and reaped; safe to call more than once), and
// returns its pid and kill.
func KillableSleeper(t testing.TB) (pid int, kill func()) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	return cmd.Process.Pid, kill
}

// DeadPID returns the pid of a child that has exited and been reaped:
// nothing runs under it, barring reuse within the test.
func DeadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}

// Hogs starts n processes that each keep one CPU busy (`yes` writing to
// nowhere, as `yes >/dev/null &` does) until the test ends: what peerctl
// must work under, since it runs from hooks while builds and tests load
// the machine.
func Hogs(t testing.TB, n int) {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", os.DevNull, err)
	}
	t.Cleanup(func() { _ = null.Close() })
	for range n {
		cmd := exec.Command("yes")
		cmd.Stdout = null // a file: the child writes to it, no copying in this process
		if err := cmd.Start(); err != nil {
			t.Fatalf("start yes: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
