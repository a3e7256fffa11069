package acceptance

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A live session's record removed for good while its process runs (no
// harness does that: Claude Code and Qwen Code remove theirs only as they
// exit) is gone once the rewrite grace has passed, with the words of a
// removal; written again, it is the session appearing again.
func TestWatchGoneForARecordRemovedWhileItsProcessRuns(t *testing.T) {
	cfg := t.TempDir()
	env := configEnv(t, cfg)
	a := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "docs-0c")
	w := startWatch(t, env)
	require.Equal(t, "appeared", w.next(t, a.pid, "start").Event)

	require.NoError(t, os.Remove(filepath.Join(cfg, "sessions", strconv.Itoa(a.pid)+".json")))
	ev := w.next(t, a.pid, "the record was removed")
	require.Equal(t, "gone", ev.Event, "pid %d still runs, but its record stayed away", a.pid)
	assert.Equal(t, "removed", ev.Verdict)

	a.say(t, "name docs-writer") // written again, renamed
	ev = w.next(t, a.pid, "the record was written again")
	assert.Equal(t, "appeared", ev.Event)
	assert.Equal(t, "docs-writer", ev.Name)
}
