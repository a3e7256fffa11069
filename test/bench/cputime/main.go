//go:build unix

// Command cputime runs a command and writes its wall time and CPU time to a
// file, for scripts/bench.sh:
//
//	cputime OUTFILE CMD [ARG...]
//
// OUTFILE gets one line "WALL_MS CPU_MS": the wall time from just before
// the child is started to just after it is reaped, and the child's user
// plus system CPU time (getrusage, microsecond resolution; its own threads
// included, its children's not). The command inherits stdin, stdout,
// stderr and the environment; cputime exits with its exit code. CPU time
// is far less disturbed than wall time by other work on a busy machine, so
// the bench reports both.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: cputime OUTFILE CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "cputime:", err)
		os.Exit(127)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu time.Duration
	if ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	line := fmt.Sprintf("%.3f %.3f\n", float64(wall)/1e6, float64(cpu)/1e6)
	if werr := os.WriteFile(os.Args[1], []byte(line), 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "cputime:", werr)
		os.Exit(127)
	}
	os.Exit(code)
}
