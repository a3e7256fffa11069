package fswatch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

const bound = 10 * time.Second

func folders() map[string]*Folder {
	return map[string]*Folder{
		"fsnotify": {Poll: time.Hour}, // the slow tick must not be what notices
		"polling":  {Poll: 20 * time.Millisecond, NoNotify: true},
	}
}

// drain empties ch of pending signals.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		require.True(t, ok, "channel closed while waiting for %s", what)
	case <-time.After(bound):
		t.Fatalf("no signal within %s for %s", bound, what)
	}
}

func TestFolderSignalsChanges(t *testing.T) {
	for name, f := range folders() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			ch, err := f.Watch(ctx, dir)
			require.NoError(t, err)
			file := filepath.Join(dir, "4652.json")
			steps := []struct {
				what string
				do   func() error
			}{
				{"create", func() error { return os.WriteFile(file, []byte("{}"), 0o600) }},
				{"write", func() error { return os.WriteFile(file, []byte(`{"pid":1}`), 0o600) }},
				{"rename in", func() error {
					tmp := filepath.Join(dir, ".tmp")
					if err := os.WriteFile(tmp, []byte("{}"), 0o600); err != nil {
						return err
					}
					return os.Rename(tmp, file)
				}},
				{"remove", func() error { return os.Remove(file) }},
			}
			for _, s := range steps {
				time.Sleep(20 * time.Millisecond)
				drain(ch)
				require.NoError(t, s.do())
				waitSignal(t, ch, s.what)
			}
			cancel()
			for range ch { // must be closed once the watch ends
			}
		})
	}
}

func TestFolderNotYetThere(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config", "sessions")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := (&Folder{Poll: time.Hour}).Watch(ctx, dir)
	require.NoError(t, err)
	drain(ch)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	waitSignal(t, ch, "folder created")
	// Now dir itself is watched: a file in it signals.
	waitFileSignal(t, ch, dir, "no signal for a file in a folder created after the watch began")
}

// The folder appears after watching it failed but before the ancestor's
// watch takes effect: no event reports it, so the watch must look again
// rather than stay on the ancestor (regression: a confirmation waited out
// its whole timeout with the slow tick at an hour).
func TestFolderAppearsWhileWatchingAnAncestor(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config", "sessions")
	f := &Folder{Poll: time.Hour}
	f.beforeAdd = func(folder string) {
		if folder == root {
			require.NoError(t, os.MkdirAll(dir, 0o755))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := f.Watch(ctx, dir)
	require.NoError(t, err)
	waitFileSignal(t, ch, dir, "no signal for a file in a folder that appeared while the watch was being set")
}

// The watched folder appears as a symbolic link to the folder already
// watched (its parent): both paths share one inotify watch, which must not
// be removed as "the ancestor's".
func TestFolderAppearsAsLinkToItsParent(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := (&Folder{Poll: time.Hour}).Watch(ctx, dir)
	require.NoError(t, err)
	drain(ch)
	require.NoError(t, os.Symlink(".", dir))
	waitSignal(t, ch, "link created")
	waitFileSignal(t, ch, dir, "no signal for a file in a folder reached through a link to its parent")
}

// A watched path that is a symbolic link, pointed at another folder: no
// event says so; the slow tick notices and moves the watch.
func TestFolderLinkRetargeted(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	require.NoError(t, os.Mkdir(a, 0o755))
	require.NoError(t, os.Mkdir(b, 0o755))
	dir := filepath.Join(root, "sessions")
	require.NoError(t, os.Symlink(a, dir))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := (&Folder{Poll: 20 * time.Millisecond}).Watch(ctx, dir)
	require.NoError(t, err)
	waitFileSignal(t, ch, dir, "no signal through the link")
	tmp := filepath.Join(root, "tmp")
	require.NoError(t, os.Symlink(b, tmp))
	require.NoError(t, os.Rename(tmp, dir))
	waitFileSignal(t, ch, b, "no signal for the folder the link now names")
}

func TestFolderRemovedAndRecreated(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	require.NoError(t, os.Mkdir(dir, 0o755))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := (&Folder{Poll: time.Hour}).Watch(ctx, dir)
	require.NoError(t, err)
	drain(ch)
	require.NoError(t, os.Remove(dir))
	waitSignal(t, ch, "folder removed")
	require.NoError(t, os.Mkdir(dir, 0o755))
	waitFileSignal(t, ch, dir, "no signal after the folder came back")
}

func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func exitWatchers() map[string]*Exits {
	return map[string]*Exits{
		"pidfd":   {Poll: time.Hour}, // a poll would take an hour: the pidfd must notice
		"polling": {Poll: 20 * time.Millisecond, NoPidfd: true},
	}
}

func TestExitedWhenKilled(t *testing.T) {
	for name, x := range exitWatchers() {
		t.Run(name, func(t *testing.T) {
			cmd := startSleeper(t)
			start, err := procliveness.StartTime("/proc", cmd.Process.Pid)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := x.Exited(ctx, cmd.Process.Pid, start)
			select {
			case <-ch:
				t.Fatal("reported ended while running")
			case <-time.After(100 * time.Millisecond):
			}
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			select {
			case <-ch:
			case <-time.After(bound):
				t.Fatalf("not noticed within %s", bound)
			}
		})
	}
}

func TestExitedImmediately(t *testing.T) {
	cmd := startSleeper(t)
	start, err := procliveness.StartTime("/proc", cmd.Process.Pid)
	require.NoError(t, err)
	n, err := strconv.Atoi(start)
	require.NoError(t, err)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	cases := map[string]struct {
		pid   int
		start string
	}{
		"pid reused (start differs)": {cmd.Process.Pid, strconv.Itoa(n + 1)},
		"no such pid":                {gone.Process.Pid, ""},
		"bad pid":                    {0, ""},
	}
	for wname, x := range exitWatchers() {
		for name, tc := range cases {
			t.Run(wname+"/"+name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				select {
				case <-x.Exited(ctx, tc.pid, tc.start):
				case <-time.After(bound):
					t.Fatalf("not reported ended within %s", bound)
				}
			})
		}
	}
}

func TestExitedLeftOpenWhenContextEnds(t *testing.T) {
	for name, x := range exitWatchers() {
		t.Run(name, func(t *testing.T) {
			cmd := startSleeper(t)
			ctx, cancel := context.WithCancel(context.Background())
			ch := x.Exited(ctx, cmd.Process.Pid, "")
			cancel()
			select {
			case <-ch:
				t.Fatal("closed although the process runs")
			case <-time.After(200 * time.Millisecond):
			}
			assert.Nil(t, cmd.ProcessState)
		})
	}
}

// waitFileSignal writes a file into dir until ch signals (the watch may
// need a moment to move onto a folder that just appeared), within bound.
func waitFileSignal(t *testing.T, ch <-chan struct{}, dir, why string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		drain(ch)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "1.json"), []byte("{}"), 0o600))
		select {
		case <-ch:
			return
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), why)
	}
}
