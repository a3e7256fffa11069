package procliveness

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/peerctl/peerctl/ports"
)

// MaxTableProcs bounds the processes one Table lists.
const MaxTableProcs = 1 << 16

// Table is one pass over the process table under a /proc root, shared by
// the harnesses that find their sessions among the processes (Codex,
// opencode), and made afresh by Checker.Gone for each batch of pids it
// answers from a listing: the root is listed once, on the first ask, and each file of a
// process is read at most once, when first asked for. A Table is a
// snapshot: a process that starts after the listing is not in it, one that
// ends is still listed (its files then fail to read, as they would for any
// reader). Safe for concurrent use. Off Linux the root does not exist and
// the table is empty.
type Table struct {
	root string

	listOnce sync.Once
	pids     []int
	// whole is set when the root was listed to its end with at most
	// MaxTableProcs processes.
	whole bool
	// byNum is pids in numeric order, sorted on the first Has.
	numOnce sync.Once
	byNum   []int

	mu    sync.Mutex
	files map[tableFile]tableRead
}

type tableFile struct {
	pid  int
	name string
	link bool
}

type tableRead struct {
	data []byte
	link string
	err  error
}

// NewTable returns an unread Table of procRoot ("" means /proc).
func NewTable(procRoot string) *Table {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &Table{root: procRoot, files: map[tableFile]tableRead{}}
}

type tableKey struct{ root string }

// TableOf is the Table of procRoot that ctx's read scope shares
// (ports.WithReadScope: one per read of the registries), built on the
// first ask; a fresh one when ctx carries no scope.
func TableOf(ctx context.Context, procRoot string) *Table {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return ports.Scoped(ctx, tableKey{procRoot}, func() *Table { return NewTable(procRoot) })
}

// Root is the /proc root read.
func (t *Table) Root() string { return t.root }

// Dir is the folder of process pid (<root>/<pid>).
func (t *Table) Dir(pid int) string { return filepath.Join(t.root, strconv.Itoa(pid)) }

// PIDs are the processes listed under the root (at most MaxTableProcs),
// in the order of their folder names (as os.ReadDir gives them); nil when
// the root cannot be read.
func (t *Table) PIDs() []int {
	t.listOnce.Do(func() {
		f, err := os.Open(t.root)
		if err != nil {
			return
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		slices.Sort(names)
		t.whole = err == nil
		for _, n := range names {
			if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
				if len(t.pids) >= MaxTableProcs {
					t.whole = false
					break
				}
				t.pids = append(t.pids, pid)
			}
		}
	})
	return t.pids
}

// Has reports whether pid is listed. known is false when the listing
// cannot tell: the root could not be listed to its end, or it holds more
// than MaxTableProcs processes.
func (t *Table) Has(pid int) (listed, known bool) {
	t.numOnce.Do(func() { t.byNum = slices.Sorted(slices.Values(t.PIDs())) })
	_, listed = slices.BinarySearch(t.byNum, pid)
	return listed, t.whole
}

// File is the content of the file name of process pid (<root>/<pid>/<name>:
// "comm", "cmdline", "stat", "environ"), at most limit bytes, read once
// per Table. A first read with a smaller limit bounds what later asks get.
func (t *Table) File(pid int, name string, limit int64) ([]byte, error) {
	r := t.memo(tableFile{pid: pid, name: name}, func() (r tableRead) {
		f, err := os.Open(filepath.Join(t.Dir(pid), name))
		if err != nil {
			return tableRead{err: err}
		}
		defer f.Close()
		r.data, r.err = io.ReadAll(io.LimitReader(f, limit))
		return r
	})
	return r.data, r.err
}

// Link is the target of the link name of process pid ("exe", "cwd"),
// read once per Table.
func (t *Table) Link(pid int, name string) (string, error) {
	r := t.memo(tableFile{pid: pid, name: name, link: true}, func() (r tableRead) {
		r.link, r.err = os.Readlink(filepath.Join(t.Dir(pid), name))
		return r
	})
	return r.link, r.err
}

func (t *Table) memo(k tableFile, read func() tableRead) tableRead {
	t.mu.Lock()
	r, ok := t.files[k]
	t.mu.Unlock()
	if ok {
		return r
	}
	r = read()
	t.mu.Lock()
	t.files[k] = r
	t.mu.Unlock()
	return r
}
