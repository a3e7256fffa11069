//go:build linux

package acceptance

// Live (PEERCTL_LIVE=1): how a real Claude Code session rewrites its
// record (docs/CLAUDE-CODE-FACTS.md, "How a session rewrites its record"),
// and that peerctl's registry read never loses it meanwhile.

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/test/livecc"
)

// While a session is renamed and opens and closes a dialog, its record is
// only ever rewritten in place (the folder sees no remove, rename or
// create of it), a read never finds it missing, and a registry read made
// at any moment lists it whole: a read that caught it torn read it again.
func TestLiveRecordIsRewrittenInPlace(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	s := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	dir := filepath.Join(s.ConfigDir, fsregistry.SessionsDirName)
	file := filepath.Join(dir, strconv.Itoa(s.PID)+".json")
	ops := recordOps(t, file)
	reads := readBackToBack(t, file, fsregistry.New(dir))

	command := func(text string) {
		s.Type(text)
		time.Sleep(time.Second) // the command menu settles before Enter picks the command
		s.Keys("Enter")
	}
	waitRecord := func(what string, ok func(map[string]any) bool) {
		var rec map[string]any
		require.True(t, waitFor(60*time.Second, func() bool { rec = s.Record(); return ok(rec) }),
			"%s: record %v\nscreen:\n%s", what, rec, s.Screen())
	}
	// Long and short names in turn: a shorter record over a longer one is
	// what leaves the old tail between the write and the ftruncate.
	for i := range 3 {
		long := "a-rather-long-name-for-this-session-" + strconv.Itoa(i)
		command("/rename " + long)
		waitRecord("renamed "+long, func(r map[string]any) bool { return r["name"] == long })
		short := "s" + strconv.Itoa(i)
		command("/rename " + short)
		waitRecord("renamed "+short, func(r map[string]any) bool { return r["name"] == short })
	}
	command("/config")
	waitRecord("dialog open", func(r map[string]any) bool { return r["status"] == "waiting" })
	// Escape closes the dialog; on a busy machine a key can come before
	// the dialog takes keys (its search box first), so it is pressed
	// again until the record says so.
	var rec map[string]any
	closed := waitFor(120*time.Second, func() bool {
		s.Keys("Escape")
		return waitFor(15*time.Second, func() bool { rec = s.Record(); return rec["status"] != "waiting" })
	})
	require.True(t, closed, "dialog closed: record %v\nscreen:\n%s", rec, s.Screen())
	regLost := reads.stop()

	writes := 0
	var notInPlace []string
	for _, op := range ops() {
		switch op {
		case fsnotify.Write:
			writes++
		case fsnotify.Chmod:
		default:
			notInPlace = append(notInPlace, op.String())
		}
	}
	t.Logf("%d modify events; %d reads of the file: %d missing, %d torn; %d registry reads", writes, reads.raw.Load(), reads.missing.Load(), reads.torn.Load(), reads.regReads.Load())
	assert.Empty(t, notInPlace, "the record was removed, renamed or created while the session ran")
	assert.Positive(t, writes, "the record was rewritten")
	assert.Zero(t, reads.missing.Load(), "a read found the record missing while the session ran")
	assert.Empty(t, regLost, "a registry read lost the live session's record")
}
