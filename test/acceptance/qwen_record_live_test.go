//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1): how a real Qwen Code session rewrites its record
// (docs/QWEN-CODE-FACTS.md, "How a session rewrites its record"), and that
// peerctl's registry read never loses it meanwhile.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/test/liveqwen"
)

// While a session clears its conversation (a new session id in its
// record) twice, its record is replaced whole each time: a temporary file
// renamed over it (the folder sees it moved in, never removed), so a read
// never finds it missing or torn, and a registry read made at any moment
// lists it.
func TestLiveQwenRecordIsReplacedWhole(t *testing.T) {
	bin := liveqwen.Require(t, liveqwen.Version())
	root := liveqwen.NewRoot(t)
	s := liveqwen.Start(t, bin, root, liveqwen.Options{Label: "rw"})
	dir := filepath.Dir(s.File)
	w, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, w.Add(dir))

	var mu sync.Mutex
	var removed []string
	replaced := 0
	go func() {
		for ev := range w.Events {
			if ev.Name != s.File {
				continue
			}
			mu.Lock()
			switch {
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				removed = append(removed, ev.Op.String())
			case ev.Has(fsnotify.Create): // a rename over it (IN_MOVED_TO)
				replaced++
			}
			mu.Unlock()
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	var raw, missing, torn, regReads atomic.Int64
	var regLost []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the file, back to back
		defer wg.Done()
		for ctx.Err() == nil {
			b, err := os.ReadFile(s.File)
			raw.Add(1)
			switch {
			case err != nil:
				missing.Add(1)
			case !json.Valid(b):
				torn.Add(1)
			}
		}
	}()
	go func() { // peerctl's registry read, back to back
		defer wg.Done()
		reg := qwenregistry.New(dir)
		for ctx.Err() == nil {
			snap, err := reg.Read(ctx)
			if ctx.Err() != nil {
				return
			}
			regReads.Add(1)
			found := false
			for _, r := range snap.Records {
				if r.File == filepath.Base(s.File) {
					found = true
					if r.Problem != "" {
						mu.Lock()
						regLost = append(regLost, r.Problem)
						mu.Unlock()
					}
				}
			}
			if err != nil || !found {
				mu.Lock()
				regLost = append(regLost, "record missing from the read")
				mu.Unlock()
			}
		}
	}()

	sessionID := func() string {
		b, err := os.ReadFile(s.File)
		if err != nil {
			return ""
		}
		var rec struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(b, &rec)
		return rec.SessionID
	}
	for i := range 2 {
		before := sessionID()
		// /clear starts a new conversation, and Qwen Code writes its new
		// session id into the record; on a busy machine the TUI may take
		// keys late, so the command is typed again until the record says so.
		cleared := waitFor(120*time.Second, func() bool {
			s.Keys("C-u")
			s.Type("/clear")
			time.Sleep(time.Second) // the command menu settles before Enter picks the command
			s.Keys("Enter")
			return waitFor(15*time.Second, func() bool { id := sessionID(); return id != "" && id != before })
		})
		require.True(t, cleared, "clear %d: the record still names session %s\nscreen:\n%s", i+1, before, s.Screen())
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d replacements; %d reads of the file: %d missing, %d torn; %d registry reads", replaced, raw.Load(), missing.Load(), torn.Load(), regReads.Load())
	assert.Empty(t, removed, "the record was removed or moved away while the session ran")
	assert.GreaterOrEqual(t, replaced, 2, "the record was replaced (a file renamed over it) for each clear")
	assert.Zero(t, missing.Load(), "a read found the record missing while the session ran")
	assert.Zero(t, torn.Load(), "a read found the record torn")
	assert.Empty(t, regLost, "a registry read lost the live session's record")
}
