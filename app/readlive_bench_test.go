//go:build linux

package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/test/testproc"
)

// BenchmarkReadLiveStale is list's registry read over a folder of n stale
// Claude Code records (pids no process has, each with its key file) and
// this machine's /proc: every record is skipped unread. cpu-ns/op is the
// CPU time per read, which a busy machine disturbs less than ns/op.
func BenchmarkReadLiveStale(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			old := time.Now().Add(-time.Hour)
			for i := range n {
				pid := 1<<30 + i // above any pid_max: never a process
				p := filepath.Join(dir, fmt.Sprintf("%d.json", pid))
				body := fmt.Appendf(nil, `{"pid":%d,"sessionId":"26df9a5b-d23c-4223-a45d-%012x","cwd":"/home/dev/src/shop","procStart":"35646","kind":"interactive","messagingSocketPath":"/tmp/cc-socks/%d.sock","name":"proj-%d"}`, pid, pid, pid, pid)
				if err := os.WriteFile(p, body, 0o600); err != nil {
					b.Fatal(err)
				}
				if err := os.Chtimes(p, old, old); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte(`{"peerToken":"x"}`), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			svc := New(fsregistry.New(dir), procliveness.New(), nil, "")
			ctx := context.Background()
			b.ReportAllocs()
			defer testproc.CPUPerOp(b)()
			for b.Loop() {
				l, _, err := svc.readLive(ctx)
				if err != nil || len(l.Entries) != 0 {
					b.Fatalf("read: %d entries, %v", len(l.Entries), err)
				}
			}
		})
	}
}
