package qwenregistry_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
)

// BenchmarkReadMissing is the cost Qwen Code adds to every list when no
// Qwen Code home exists: one failed open of the folder.
func BenchmarkReadMissing(b *testing.B) {
	r := qwenregistry.New(filepath.Join(b.TempDir(), "absent", "sessions"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
