package app_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// A session that removes its record and then exits (Claude Code's clean
// exit) between the registry's read of the file and the check of its pid
// is read as a record whose process is dead. The file is gone by the
// time the pid is found dead: no record, not a stale one.
func TestListARecordGoneWithItsProcessIsNoRecord(t *testing.T) {
	dir := t.TempDir()
	kept := record(4652, idA, "crashed")
	kept.Path = filepath.Join(dir, kept.File)
	require.NoError(t, os.WriteFile(kept.Path, []byte("{}"), 0o600))
	left := record(4653, idB, "exited")
	left.Path = filepath.Join(dir, left.File) // read, then removed: not on disk now

	w := newWorld(t, "/cfg")
	w.registry([]domain.Record{kept, left}, 4652, 4653)
	l, err := w.svc.List(context.Background(), true)
	require.NoError(t, err)
	require.Len(t, l.Entries, 1)
	assert.Equal(t, 4652, l.Entries[0].Record.PID)
	assert.Equal(t, domain.VerdictStale, l.Entries[0].Verdict, "a dead pid's record still on disk is stale")
}

// A record whose Path is not its own file is not gone with its process
// when nothing is at Path: a Codex thread's Path is its rollout (the
// record is the daemon's or a process's word), so list --all keeps a
// thread that is not live whatever became of its rollout (archived,
// deleted, or not written yet).
func TestListKeepsARecordWhosePathIsNotItsFile(t *testing.T) {
	rec := domain.Record{Harness: codex.Kind, File: idC, SessionID: idC, Kind: codex.KindClient, PID: 4654,
		Path:    filepath.Join(t.TempDir(), "rollout-2026-12-07T14-20-15-"+idC+".jsonl"),
		Problem: "loaded by Codex's app-server daemon but no Codex client runs there", ProblemVerdict: domain.VerdictHeadless}
	w := newWorld(t, "/cfg")
	w.registry([]domain.Record{rec})
	l, err := w.svc.List(context.Background(), true)
	require.NoError(t, err)
	require.Len(t, l.Entries, 1, "the thread is listed")
	assert.Equal(t, domain.VerdictHeadless, l.Entries[0].Verdict)
}

// In watch, the same clean exit is reported gone (record removed), never
// died (stale): the test that caught it ran a watch while a session
// stopped, and saw died once in many runs on a busy machine.
func TestWatchCleanExitReadMidwayIsGone(t *testing.T) {
	dir := t.TempDir()
	rec := record(4652, idA, "proj-89")
	rec.Path = filepath.Join(dir, rec.File)
	require.NoError(t, os.WriteFile(rec.Path, []byte("{}"), 0o600))

	w := newWorld(t, "/cfg")
	var reads atomic.Int32
	w.reg.EXPECT().Read(gomock.Any()).DoAndReturn(func(context.Context) (ports.Snapshot, error) {
		if reads.Add(1) == 2 {
			// The session removes its record after this read took it, and exits.
			require.NoError(t, os.Remove(rec.Path))
		}
		return ports.Snapshot{Dir: dir, Records: []domain.Record{rec}}, nil
	}).AnyTimes()
	w.live.EXPECT().Check(gomock.Any()).DoAndReturn(func(domain.Record) domain.Liveness {
		if reads.Load() >= 2 {
			return domain.Liveness{Alive: domain.No}
		}
		return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
	}).AnyTimes()

	events := startWatching(t, w.svc).events
	require.Equal(t, domain.EventAppeared, nextEvent(t, events, "start").Kind)
	ev := nextEvent(t, events, "the clean exit")
	assert.Equal(t, domain.EventGone, ev.Kind)
	assert.Equal(t, domain.VerdictRemoved, ev.Entry.Verdict)
}
