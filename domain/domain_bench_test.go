package domain

import (
	"fmt"
	"testing"
)

// BenchmarkEndpoint formats and parses endpoints, plain and with escapes.
func BenchmarkEndpoint(b *testing.B) {
	for _, tc := range []struct{ name, sessName, socket string }{
		{"plain", "proj-89", "/tmp/cc-socks/4652.sock"},
		{"escaped", "build:main 50% ünï", "/tmp/a:b/cc-socks/4652.sock"},
	} {
		ep, err := NewStandInEndpoint(4652, tc.sessName, tc.socket)
		if err != nil {
			b.Fatal(err)
		}
		s := ep.String()
		b.Run("format/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ep.String() != s {
					b.Fatal("format changed")
				}
			}
		})
		b.Run("parse/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got, err := ParseEndpoint(s); err != nil || got != ep {
					b.Fatalf("parse %q = %v, %v", s, got, err)
				}
			}
		})
	}
}

// benchEntries returns n classified entries: live ones every tenth, the
// rest stale, each with a distinct name and session id.
func benchEntries(n int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		r := Record{File: fmt.Sprintf("%d.json", 1000+i), PID: 1000 + i, Kind: KindInteractive,
			SessionID:  fmt.Sprintf("%08x-d23c-4223-a45d-b9ec61fda652", i),
			Name:       fmt.Sprintf("proj-%d", i),
			SocketPath: fmt.Sprintf("/tmp/cc-socks/%d.sock", 1000+i)}
		l := Liveness{Alive: No}
		if i%10 == 0 {
			l = Liveness{Alive: Yes, StartMatches: Yes}
		}
		out[i] = Classify(r, l)
	}
	return out
}

// BenchmarkResolve resolves each address family over 1,000 entries.
func BenchmarkResolve(b *testing.B) {
	entries := benchEntries(1000)
	target := entries[500]
	for _, tc := range []struct{ name, address string }{
		{"session-id", target.Record.SessionID},
		{"prefix", target.Record.SessionID[:8]},
		{"name", target.Record.Name},
		{"endpoint", target.Endpoint().String()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Resolve(entries, tc.address)
				if err != nil || s.PID() != target.Record.PID {
					b.Fatalf("resolve %q: pid %d, %v", tc.address, s.PID(), err)
				}
			}
		})
	}
	b.Run("not-live", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Resolve(entries, entries[501].Record.Name); err == nil {
				b.Fatal("a stale record resolved")
			}
		}
	})
}

// BenchmarkClassify decides one record's verdict.
func BenchmarkClassify(b *testing.B) {
	r := Record{File: "4652.json", PID: 4652, Kind: KindInteractive, SessionID: "26df9a5b-d23c-4223-a45d-b9ec61fda652",
		Name: "proj-89", SocketPath: "/tmp/cc-socks/4652.sock"}
	for _, tc := range []struct {
		name string
		l    Liveness
		want Verdict
	}{
		{"live", Liveness{Alive: Yes, StartMatches: Yes}, VerdictLive},
		{"stale", Liveness{Alive: No}, VerdictStale},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if e := Classify(r, tc.l); e.Verdict != tc.want {
					b.Fatalf("verdict %s", e.Verdict)
				}
			}
		})
	}
}
