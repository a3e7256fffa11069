//go:build linux

package procliveness

import (
	"os"
	"os/exec"
	"testing"

	"github.com/peerctl/peerctl/domain"
)

// BenchmarkCheck probes a live process (kill + /proc/<pid>/stat), a live
// pid with the wrong start time (pid reuse) and a dead pid (kill only).
func BenchmarkCheck(b *testing.B) {
	c := New()
	self := os.Getpid()
	start, err := StartTime("/proc", self)
	if err != nil {
		b.Skipf("no /proc here: %v", err)
	}
	dead := benchDeadPID(b)
	for _, tc := range []struct {
		name string
		rec  domain.Record
		want domain.Tri
	}{
		{"live", domain.Record{PID: self, ProcStart: start}, domain.Yes},
		{"reused", domain.Record{PID: self, ProcStart: start + "0"}, domain.Yes},
		{"dead", domain.Record{PID: dead, ProcStart: "1"}, domain.No},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if l := c.Check(tc.rec); l.Alive != tc.want {
					b.Fatalf("alive = %s, want %s", l.Alive, tc.want)
				}
			}
		})
	}
}

// benchDeadPID returns the pid of a child that has exited and been reaped.
func benchDeadPID(b *testing.B) int {
	b.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		b.Skipf("cannot run true: %v", err)
	}
	return cmd.Process.Pid
}

// BenchmarkParseStat extracts field 22 from a typical stat line.
func BenchmarkParseStat(b *testing.B) {
	data := []byte("4652 (claude) S 4651 4652 4652 34817 4652 4194560 52381 0 0 0 412 95 0 0 20 0 11 0 35646 1136656384 61234 18446744073709551615 1 1 0 0 0 0 0 16781312 1073758719 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
	b.ReportAllocs()
	for b.Loop() {
		if v, err := ParseStat(data); err != nil || v != "35646" {
			b.Fatalf("ParseStat = %q, %v", v, err)
		}
	}
}
