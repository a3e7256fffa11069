package courierexec

import (
	"fmt"
	"testing"

	"github.com/peerctl/peerctl/test/bench/fakeoutput"
)

// BenchmarkParseOutput parses a realistic verbose courier output (the
// shape of Claude Code 2.1.328 `claude -p --output-format json --verbose`).
func BenchmarkParseOutput(b *testing.B) {
	for _, agents := range []int{3, 100} {
		stdout := fakeoutput.Verbose("proj-89", "the API changed, rebase on main", agents)
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stdout)))
			for b.Loop() {
				out, err := ParseOutput(stdout)
				if err != nil || out.Result == nil || !out.Array {
					b.Fatalf("parse: %v", err)
				}
			}
		})
	}
}

// BenchmarkJudge parses and judges a realistic verbose courier output that
// proves delivery.
func BenchmarkJudge(b *testing.B) {
	for _, agents := range []int{3, 100} {
		text := "the API changed, rebase on main"
		run := Run{Stdout: fakeoutput.Verbose("proj-89", text, agents)}
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(run.Stdout)))
			for b.Loop() {
				if err := Judge(run, "proj-89", text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
