//go:build unix

package acceptance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
)

// recordOps watches file's folder and gathers the operations the folder
// reports on file (not on the other names in it); ops returns them so far.
func recordOps(t *testing.T, file string) (ops func() []fsnotify.Op) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	require.NoError(t, w.Add(filepath.Dir(file)))
	var mu sync.Mutex
	var seen []fsnotify.Op
	go func() {
		for ev := range w.Events {
			if ev.Name == file {
				mu.Lock()
				seen = append(seen, ev.Op)
				mu.Unlock()
			}
		}
	}()
	return func() []fsnotify.Op {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// recordReads reads a record file, and the registry that lists it, back to
// back until stop: how often each was read, and what was missed.
type recordReads struct {
	raw, missing, torn, regReads atomic.Int64

	mu      sync.Mutex
	regLost []string // why a registry read did not list the record whole

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// readBackToBack starts reading file and reg (whose records name file by
// its base name) back to back, until stop or the test's end.
func readBackToBack(t *testing.T, file string, reg ports.Registry) *recordReads {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recordReads{cancel: cancel}
	t.Cleanup(func() { r.stop() })
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			b, err := os.ReadFile(file)
			r.raw.Add(1)
			switch {
			case err != nil:
				r.missing.Add(1)
			case !json.Valid(b):
				r.torn.Add(1)
			}
		}
	}()
	go func() {
		defer r.wg.Done()
		for ctx.Err() == nil {
			snap, err := reg.Read(ctx)
			if ctx.Err() != nil {
				return
			}
			r.regReads.Add(1)
			found := false
			for _, rec := range snap.Records {
				if rec.File == filepath.Base(file) {
					found = true
					if rec.Problem != "" {
						r.lost(rec.Problem)
					}
				}
			}
			if err != nil || !found {
				r.lost("record missing from the read")
			}
		}
	}()
	return r
}

func (r *recordReads) lost(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regLost = append(r.regLost, why)
}

// stop ends the reads and returns what the registry reads lost; it may be
// called more than once.
func (r *recordReads) stop() []string {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.regLost
}
