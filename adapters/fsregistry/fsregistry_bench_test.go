package fsregistry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchRecord is a record shaped like Claude Code 2.1.328's <pid>.json
// (the fields and sizes of a real one, about 700 bytes).
func benchRecord(pid int) []byte {
	return fmt.Appendf(nil, `{"pid":%d,"sessionId":"26df9a5b-d23c-4223-a45d-%012x","cwd":"/home/dev/src/shop","startedAt":1796027521308,"procStart":"35646","version":"2.1.328","peerProtocol":1,"peerFeatures":["notify_idle","reply_across_default_dirs","artifact_yield"],"kind":"interactive","entrypoint":"cli","pidDomain":"linux:5f0c2a9e8b7d4c1fa3e6b9d2c4f8a1e7:pid:[4026531836]","asksForConvertedSkills":null,"tmux":"cc3:@2.%%2","messagingSocketPath":"/tmp/cc-socks/%d.sock","name":"proj-%d","nameSource":"derived","nameSince":1796027521308,"status":"idle","updatedAt":1796027533912,"statusUpdatedAt":1796027533912}`, pid, pid, pid, pid)
}

// benchRegistry writes n records (with a key file beside each, as Claude
// Code does) into a fresh folder whose mtimes are old enough that no read
// counts as torn.
func benchRegistry(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range n {
		pid := 100000 + i
		p := filepath.Join(dir, fmt.Sprintf("%d.json", pid))
		if err := os.WriteFile(p, benchRecord(pid), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte(`{"peerToken":"x"}`), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkRead reads a whole registry folder: list, open, read and parse
// every record.
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			r := New(benchRegistry(b, n))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				snap, err := r.Read(ctx)
				if err != nil || len(snap.Records) != n {
					b.Fatalf("read: %d records, %v", len(snap.Records), err)
				}
			}
		})
	}
}

// BenchmarkReadWorkers reads 1,000 and 10,000 records with pools of
// several sizes ("auto" is what Read picks: 4 x GOMAXPROCS, 4 to 32).
func BenchmarkReadWorkers(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		dir := benchRegistry(b, n)
		for _, w := range []int{1, 2, 4, 0} {
			name := fmt.Sprintf("records=%d/workers=%d", n, w)
			if w == 0 {
				name = fmt.Sprintf("records=%d/workers=auto", n)
			}
			b.Run(name, func(b *testing.B) {
				r := New(dir)
				r.workers = w
				b.ReportAllocs()
				for b.Loop() {
					if snap, err := r.Read(context.Background()); err != nil || len(snap.Records) != n {
						b.Fatalf("read: %d records, %v", len(snap.Records), err)
					}
				}
			})
		}
	}
}

// BenchmarkParse decodes one realistic record.
func BenchmarkParse(b *testing.B) {
	data := benchRecord(4652)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
