//go:build linux

package procliveness

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkGone compares the two ways Gone answers n pids of exited
// processes: kill(pid, 0) each, or one listing of /proc (with its checks
// that /proc lists every process) and a lookup each, with this machine's
// processes and with 300 more. cpu-ns/op is the CPU time (user and
// system) an answer costs, which a busy machine disturbs less than ns/op.
// ListedBatch is set where the listing starts to win.
func BenchmarkGone(b *testing.B) {
	dead := benchDeadPID(b)
	for _, extra := range []int{0, 300} {
		if extra > 0 {
			startSleepers(b, extra)
		}
		procs := len(NewTable("/proc").PIDs())
		for _, n := range []int{8, 16, 32, 64, 128, 1000} {
			pids := make([]int, n)
			for i := range pids {
				pids[i] = dead
			}
			b.Run(fmt.Sprintf("procs=%d/pids=%d/kill", procs, n), func(b *testing.B) {
				defer cpuPerOp(b)()
				for b.Loop() {
					for _, pid := range pids {
						if !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
							b.Fatal("not gone")
						}
					}
				}
			})
			b.Run(fmt.Sprintf("procs=%d/pids=%d/listed", procs, n), func(b *testing.B) {
				b.ReportAllocs()
				defer cpuPerOp(b)()
				for b.Loop() {
					if !listsEveryProcess("/proc") {
						b.Skip("/proc here does not list every process")
					}
					t := NewTable("/proc")
					for _, pid := range pids {
						if listed, known := t.Has(pid); listed || !known {
							b.Fatal("not gone")
						}
					}
				}
			})
		}
	}
}

// startSleepers starts n processes that sleep until the benchmark ends.
func startSleepers(b *testing.B, n int) {
	b.Helper()
	for range n {
		cmd := exec.Command("sleep", "3600")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// cpuPerOp reports, when the returned func is called, the CPU time this
// process spent per op since cpuPerOp was called.
func cpuPerOp(b *testing.B) func() {
	cpu := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}
