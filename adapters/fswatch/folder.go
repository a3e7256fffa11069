// Package fswatch notices change without polling where the OS allows: a
// folder through fsnotify (inotify on Linux), a process's end through a
// pidfd (pidfd_open(2) + poll(2) via golang.org/x/sys/unix, Linux 5.3+).
// Where those are unavailable it falls back to polling at a fixed interval.
// It only reads: it never writes, renames or deletes anything it watches.
package fswatch

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/peerctl/peerctl/ports"
)

// DefaultPoll is the polling interval of the fallbacks.
const DefaultPoll = 500 * time.Millisecond

// maxAncestors bounds how far up Watch climbs to find an existing folder
// to watch while dir does not exist yet.
const maxAncestors = 3

// Folder watches folders. The zero value uses fsnotify with a DefaultPoll
// fallback; build one with NewFolder.
type Folder struct {
	// Poll is the fallback interval (0: DefaultPoll).
	Poll time.Duration
	// NoNotify forces the polling fallback (tests, and file systems where
	// inotify says nothing, such as some network mounts).
	NoNotify bool

	beforeAdd func(folder string) // see notifier.beforeAdd (tests)
}

var _ ports.FolderWatcher = (*Folder)(nil)

// NewFolder returns a Folder using fsnotify.
func NewFolder() *Folder { return &Folder{} }

func (f *Folder) poll() time.Duration {
	if f.Poll > 0 {
		return f.Poll
	}
	return DefaultPoll
}

// Watch implements ports.FolderWatcher. While dir does not exist it
// watches the nearest existing ancestor (up to three levels up) and moves
// down as folders appear; if dir is removed it climbs back up; a watched
// path that comes to name another folder (a symbolic link retargeted, which
// no event reports) is watched anew within Poll. When
// fsnotify cannot start (no inotify instances left, say) it signals every
// Poll instead. It never returns an error today; the signature leaves room.
func (f *Folder) Watch(ctx context.Context, dir string) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	signal := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	var w *fsnotify.Watcher
	if !f.NoNotify {
		if nw, err := fsnotify.NewWatcher(); err == nil {
			w = nw
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	if w == nil {
		go func() {
			defer wg.Done()
			pollLoop(ctx, f.poll(), signal)
		}()
	} else {
		// The first watch is set before Watch returns, so every change
		// after it returns is noticed.
		n := &notifier{w: w, dir: filepath.Clean(dir), signal: signal, beforeAdd: f.beforeAdd}
		n.establish()
		go func() {
			defer wg.Done()
			defer w.Close()
			n.loop(ctx, f.poll())
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out, nil
}

func pollLoop(ctx context.Context, every time.Duration, signal func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			signal()
		}
	}
}

// notifier keeps one watch on dir or, while it is missing, on its nearest
// existing ancestor. When no ancestor can be watched it polls until one can.
type notifier struct {
	w       *fsnotify.Watcher
	dir     string
	watched string
	// watchedAs is what watched named when its watch was set: a path
	// that later names another folder (a symbolic link retargeted) no
	// longer reports that folder's changes.
	watchedAs os.FileInfo
	signal    func()
	// beforeAdd, when set, runs before each attempt to watch a folder
	// (tests use it to create folders inside establish's race window).
	beforeAdd func(folder string)
}

// establish watches dir, else its nearest existing ancestor, and signals
// whenever the watched folder changes (what it missed may matter).
//
// A folder created below an ancestor after the deeper watch failed but
// before the ancestor's watch took effect sends no event to anyone; so
// after watching an ancestor it looks again, and moves down while a deeper
// folder now exists.
func (n *notifier) establish() {
	candidates := []string{n.dir}
	for d, i := n.dir, 0; i < maxAncestors; i++ {
		p := filepath.Dir(d)
		if p == d {
			break
		}
		candidates = append(candidates, p)
		d = p
	}
	changed := false
	for {
		moved := n.watchNearest(candidates)
		changed = changed || moved
		if !moved || n.watched == n.dir || !deeperExists(candidates, n.watched) {
			break
		}
	}
	if changed || n.watched == "" {
		n.signal()
	}
}

// watchNearest watches the first of candidates (deepest first) that can be
// watched, dropping the previous watch; it reports whether the watched
// folder changed. With none watchable, nothing is watched.
func (n *notifier) watchNearest(candidates []string) bool {
	for _, c := range candidates {
		if c == n.watched {
			return false
		}
		if n.beforeAdd != nil {
			n.beforeAdd(c)
		}
		if err := n.w.Add(c); err == nil {
			if n.watched != "" && !sameFolder(n.watched, c) {
				// (The same folder by another path, through a symbolic
				// link, shares its inotify watch: removing one would end both.)
				_ = n.w.Remove(n.watched)
			}
			n.watched = c
			n.watchedAs, _ = os.Stat(c)
			return true
		}
	}
	if n.watched != "" {
		_ = n.w.Remove(n.watched)
		n.watched = ""
		return true
	}
	return false
}

// retargeted reports whether the watched path now names another folder
// than when its watch was set (or none).
func (n *notifier) retargeted() bool {
	fi, err := os.Stat(n.watched)
	return err != nil || n.watchedAs == nil || !os.SameFile(fi, n.watchedAs)
}

// sameFolder reports whether paths a and b name the same folder now.
func sameFolder(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// deeperExists reports whether a folder of candidates deeper than watched
// exists now.
func deeperExists(candidates []string, watched string) bool {
	for _, c := range candidates {
		if c == watched {
			return false
		}
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

func (n *notifier) loop(ctx context.Context, every time.Duration) {
	// Until dir itself is watched, a slow tick retries (and covers an
	// ancestor that cannot be watched at all); it also notices a watched
	// path that now names another folder (no event says so).
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-n.w.Events:
			if !ok {
				pollLoop(ctx, every, n.signal)
				return
			}
			if ev.Name == n.watched && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				_ = n.w.Remove(n.watched)
				n.watched = ""
			}
			if n.watched != n.dir {
				n.establish()
			}
			n.signal()
		case _, ok := <-n.w.Errors:
			if !ok {
				pollLoop(ctx, every, n.signal)
				return
			}
			// An overflow loses events: say something may have changed.
			n.signal()
		case <-t.C:
			if n.watched != "" && n.retargeted() {
				_ = n.w.Remove(n.watched)
				n.watched = ""
			}
			if n.watched != n.dir {
				n.establish()
			}
		}
	}
}
