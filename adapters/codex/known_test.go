package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// Known lists every thread of the home, open or not: the daemon's
// thread/list rows (named by their name, never their preview) when a
// daemon is up.
func TestKnownFromDaemon(t *testing.T) {
	w := newWorld(t, map[string]string{threadA: "/w/a"})
	recs, err := w.reg.Known(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, threadA, recs[0].SessionID)
	assert.Equal(t, "name 01a2", recs[0].Name)
	assert.Equal(t, Kind, recs[0].Harness)
	assert.NotEmpty(t, recs[0].SocketPath, "the daemon's socket, for the transport's home check")
}

// With no daemon, Known reads the rollouts and session_index.jsonl (the
// last name of an id wins; a broken line, or one over 64 KiB, is skipped)
// and writes nothing.
func TestKnownFromFiles(t *testing.T) {
	home := t.TempDir()
	day := filepath.Join(home, "sessions", "2026", "12", "02")
	require.NoError(t, os.MkdirAll(day, 0o755))
	rollout := filepath.Join(day, "rollout-2026-12-02T04-00-00-"+threadA+".jsonl")
	require.NoError(t, os.WriteFile(rollout, []byte(`{"type":"session_meta","payload":{"id":"`+threadA+`"}}`+"\n"), 0o644))
	index := `{"id":"` + threadB + `","thread_name":"old","updated_at":"x"}` + "\n" +
		"{not json\n" +
		`{"id":"` + threadA + `","thread_name":"` + strings.Repeat("long ", 20<<10) + `"}` + "\n" +
		`{"id":"not-a-uuid","thread_name":"x"}` + "\n" +
		`{"id":"` + threadB + `","thread_name":"night","updated_at":"y"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, "session_index.jsonl"), []byte(index), 0o644))
	reg := NewRegistry(home, "test", "")
	reg.dirs = []string{t.TempDir()}
	before := tree(t, home)
	recs, err := reg.Known(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 2)
	byID := map[string]domain.Record{recs[0].SessionID: recs[0], recs[1].SessionID: recs[1]}
	assert.Equal(t, rollout, byID[threadA].Path)
	assert.Equal(t, "night", byID[threadB].Name)
	assert.Equal(t, before, tree(t, home), "nothing written")
}

func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		out = append(out, p+" "+fi.ModTime().String())
		return err
	}))
	return out
}

// A daemon killed leaves its socket behind: Known reads the files, as
// with no daemon (issue 28, case 4).
func TestKnownWithADaemonGone(t *testing.T) {
	w := newWorld(t, nil)
	w.kill(t)
	_, day := lockedHome(t, w.fake.Home)
	require.NoError(t, os.WriteFile(filepath.Join(day, "rollout-2026-12-02T03-40-51-"+threadN+".jsonl"), []byte("{}\n"), 0o644))
	recs, err := w.reg.Known(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, threadN, recs[0].SessionID)
}

// A thread a running `codex exec` holds is known with the run's problem,
// so the queue is not given it as a closed thread (issue 28, case 2).
func TestKnownMarksAnExecRun(t *testing.T) {
	home, procRoot := t.TempDir(), t.TempDir()
	locks, day := lockedHome(t, home)
	rollout := filepath.Join(day, "rollout-2026-12-02T03-40-51-"+threadN+".jsonl")
	require.NoError(t, os.WriteFile(rollout, []byte("{}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(day, "rollout-2026-12-02T03-40-52-"+threadB+".jsonl"), []byte("{}\n"), 0o644))
	fakeProc(t, procRoot, 410, []string{"codex", "-c", "k=v", "e", "do it"}, "/w/x", filepath.Join(locks, threadN+".lock"), rollout)
	r := NewRegistry(home, "test", "")
	r.procRoot = procRoot
	recs, err := r.Known(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 2)
	byID := map[string]domain.Record{recs[0].SessionID: recs[0], recs[1].SessionID: recs[1]}
	assert.Equal(t, domain.VerdictHeadless, byID[threadN].ProblemVerdict)
	assert.Contains(t, byID[threadN].Problem, "codex exec")
	assert.Equal(t, KindExec, byID[threadN].Kind)
	assert.Empty(t, byID[threadB].Problem, "a closed thread")
}
