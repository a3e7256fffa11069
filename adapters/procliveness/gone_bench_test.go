//go:build linux

package procliveness

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/test/testproc"
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
		for range extra {
			testproc.Sleeper(b)
		}
		procs := len(NewTable("/proc").PIDs())
		for _, n := range []int{8, 16, 32, 64, 128, 1000} {
			pids := make([]int, n)
			for i := range pids {
				pids[i] = dead
			}
			b.Run(fmt.Sprintf("procs=%d/pids=%d/kill", procs, n), func(b *testing.B) {
				defer testproc.CPUPerOp(b)()
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
				defer testproc.CPUPerOp(b)()
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
