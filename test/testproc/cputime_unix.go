//go:build unix

package testproc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// CPUPerOp starts counting this process's CPU time (user and system); the
// func it returns reports that time per op of b as "cpu-ns/op", which a
// busy machine disturbs less than ns/op. Use: defer testproc.CPUPerOp(b)()
// before the loop.
func CPUPerOp(b *testing.B) func() {
	b.Helper()
	cpu := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			b.Fatalf("getrusage: %v", err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}
