package acceptance

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A live session's record removed and written again (as a /rename in Claude
// Code was seen to do) is no gone and no appeared in watch: the session's
// process never stopped.
func TestWatchNoGoneForARecordWrittenAgain(t *testing.T) {
	cfg := t.TempDir()
	env := configEnv(t, cfg)
	a := startFakeSession(t, cfg, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "docs-0c")
	w := startWatch(t, env)
	require.Equal(t, "appeared", w.next(t, a.pid, "start").Event)

	require.NoError(t, os.Remove(filepath.Join(cfg, "sessions", strconv.Itoa(a.pid)+".json")))
	// A second session written after the removal: the read that finds it
	// finds a's record missing.
	b := startFakeSession(t, cfg, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", "api-3c")
	deadline := time.After(bound)
	for seen := false; !seen; {
		select {
		case ev, ok := <-w.events:
			require.True(t, ok, "watch ended; stderr: %s", w.stderr)
			require.NotEqual(t, a.pid, ev.PID, "%s for pid %d, whose process runs, while its record was missing", ev.Event, a.pid)
			seen = ev.PID == b.pid && ev.Event == "appeared"
		case <-deadline:
			t.Fatalf("no appeared for pid %d within %s; stderr: %s", b.pid, bound, w.stderr)
		}
	}

	a.say(t, "name docs-writer") // written again, renamed
	ev := w.next(t, a.pid, "the record was written again")
	assert.Equal(t, "renamed", ev.Event, "the same session, renamed: no gone")
	assert.Equal(t, "docs-writer", ev.Name)
	assert.Equal(t, "docs-0c", ev.PreviousName)
}
