//go:build linux

package procliveness_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/peerctl/peerctl/domain"
)

// A shared adapter names no harness: its tests judge records by a
// stand-in for the zero Harness, whose classifier reads every part of the
// liveness this package reports (the pid namespace, the pid, its start).
func TestMain(m *testing.M) {
	domain.RegisterZeroHarness(domain.HarnessSpec{
		Word: "stand-in", Title: "Stand-in", Prefix: "standin-peer:v1:", Pins: "name",
		Classify: func(r domain.Record, l domain.Liveness) domain.Entry {
			e := domain.Entry{Record: r, Unchecked: l.Unchecked}
			if l.DomainMatches == domain.No {
				e.Verdict, e.Reason = domain.VerdictForeign, "pidDomain "+r.PIDDomain+" is not ours"
				return e
			}
			e.Verdict, e.Reason = domain.PIDVerdict(r, l, func() string {
				return fmt.Sprintf("pid %d started at %s, record says procStart %s", r.PID, l.ActualStart, r.ProcStart)
			})
			e.Addressable = e.Verdict == domain.VerdictLive
			return e
		},
	})
	os.Exit(m.Run())
}
