//go:build linux

package acceptance

// Live (PEERCTL_LIVE=1): how a real Qwen Code session rewrites its record
// (docs/QWEN-CODE-FACTS.md, "How a session rewrites its record"), and that
// peerctl's registry read never loses it meanwhile.

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	ops := recordOps(t, s.File)
	reads := readBackToBack(t, s.File, qwenregistry.New(filepath.Dir(s.File)))

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
	regLost := reads.stop()

	replaced := 0
	var removed []string
	for _, op := range ops() {
		switch {
		case op.Has(fsnotify.Remove), op.Has(fsnotify.Rename):
			removed = append(removed, op.String())
		case op.Has(fsnotify.Create): // a file renamed over it (IN_MOVED_TO)
			replaced++
		}
	}
	t.Logf("%d replacements; %d reads of the file: %d missing, %d torn; %d registry reads", replaced, reads.raw.Load(), reads.missing.Load(), reads.torn.Load(), reads.regReads.Load())
	assert.Empty(t, removed, "the record was removed or moved away while the session ran")
	assert.GreaterOrEqual(t, replaced, 2, "the record was replaced (a file renamed over it) for each clear")
	assert.Zero(t, reads.missing.Load(), "a read found the record missing while the session ran")
	assert.Zero(t, reads.torn.Load(), "a read found the record torn")
	assert.Empty(t, regLost, "a registry read lost the live session's record")
}
