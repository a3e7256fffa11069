// Package fsregistry reads Claude Code's live-session registry folder,
// <config dir>/sessions/, into domain records. It only ever reads: it never
// writes, renames or deletes, reads each record with harnessfile.Read (never
// following a symlink, never blocking on a FIFO), and never opens a
// *.key file (those hold a session's peerToken, a secret).
//
// The file format is Claude Code's <pid>.json as observed in 2.1.224 and
// 2.1.328 (docs/CLAUDE-CODE-FACTS.md). Parsing is tolerant where Claude Code
// is (unknown fields ignored, procStart as string or number) and strict
// where a guess could mislead (trailing garbage, wrong pid, oversize files).
//
// The package also supplies the domain with Claude Code's rules (spec.go:
// the cc-peer endpoint and what it pins, the verdict classifier, the reply
// matcher), as the zero Harness's spec.
package fsregistry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/internal/harnessfile"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// MaxRecordBytes caps how much of one record file is read (256 KiB, the
// cap Claude Code 2.1.328's own listing applies: it skips a larger file).
// Real records are under 1 KiB; a larger file is reported malformed unread.
const MaxRecordBytes = 256 << 10

// SessionsDirName is the registry folder's name inside the config dir.
const SessionsDirName = "sessions"

// Registry reads one registry folder. The zero value is not usable; build it
// with New.
type Registry struct {
	dir string
	// tornEvery is the pause between reads of a file caught mid-write (read
	// again until whole, for up to ports.RewriteGrace); freshWindow is how
	// recent its mtime must be to count as such.
	tornEvery   time.Duration
	freshWindow time.Duration
	now         func() time.Time
	// workers fixes the size of the read pool (benchmarks); 0 picks it.
	workers int
	// sleep waits out tornEvery (time.Sleep; tests replace it to rewrite
	// the file between reads).
	sleep func(time.Duration)
}

var (
	_ ports.HarnessRegistry   = (*Registry)(nil)
	_ ports.SelectiveRegistry = (*Registry)(nil)
	_ ports.PIDRegistry       = (*Registry)(nil)
)

// New returns a Registry for dir, the sessions folder itself (see
// SessionsDir to derive it from a config dir).
func New(dir string) *Registry {
	return &Registry{dir: dir, tornEvery: 10 * time.Millisecond, freshWindow: time.Second, now: time.Now, sleep: time.Sleep}
}

// Dir returns the folder this registry reads.
func (r *Registry) Dir() string { return r.dir }

// Harness is domain.HarnessClaudeCode.
func (r *Registry) Harness() domain.Harness { return domain.HarnessClaudeCode }

// ConfigDir decides Claude Code's config dir the way Claude Code does:
// flag (when non-empty) wins, else $CLAUDE_CONFIG_DIR when set and
// non-empty, else ~/.claude. getenv is usually os.Getenv. The result is
// absolute and clean: a relative value is taken against the caller's working
// directory (filepath.Abs) here, once, so a process started elsewhere (the
// courier runs in a folder of its own) reads the same registry. Warnings are
// returned for values that are probably mistakes (a literal leading "~",
// which no shell expanded). The error is the home directory's or the
// working directory's lookup failing.
func ConfigDir(flag string, getenv func(string) string) (dir string, warnings []string, err error) {
	source := "--config-dir"
	dir = flag
	if dir == "" {
		dir, source = getenv("CLAUDE_CONFIG_DIR"), "CLAUDE_CONFIG_DIR"
	}
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			h, herr := os.UserHomeDir()
			if herr != nil {
				return "", nil, fmt.Errorf("find home directory for ~/.claude: %w", herr)
			}
			home = h
		}
		dir, source = filepath.Join(home, ".claude"), "~/.claude"
	} else if strings.HasPrefix(dir, "~") {
		warnings = append(warnings, fmt.Sprintf("%s %q starts with a literal '~' that no shell expanded; it is taken relative to the working directory", source, dir))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("make %s %q absolute: %w", source, dir, err)
	}
	return abs, warnings, nil
}

// SessionsDir returns <configDir>/sessions.
func SessionsDir(configDir string) string { return filepath.Join(configDir, SessionsDirName) }

// Read lists the folder and parses every candidate record. A missing folder
// is an empty snapshot with Missing set; an unreadable folder (or a file in
// its place) is an error. Files that cannot be used are returned with
// Record.Problem set, never dropped silently and never fatal.
func (r *Registry) Read(ctx context.Context) (ports.Snapshot, error) {
	return r.ReadMatching(ctx, nil)
}

// ReadMatching is Read restricted to the candidate files whose base names
// keep returns (nil keeps every one): the others are neither opened nor
// returned. keep is called once, with every candidate name, after the
// folder has been listed whole (so a caller may answer from a listing of
// the processes made then; see ports.SelectiveRegistry). It lets a caller
// that needs only some records (the live ones, say) skip the rest unread.
func (r *Registry) ReadMatching(ctx context.Context, keep func(names []string) []string) (ports.Snapshot, error) {
	snap := ports.Snapshot{Dir: r.dir}
	names, err := candidateNames(r.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			snap.Missing = true
			return snap, nil
		}
		return snap, fmt.Errorf("read registry %s: %w", r.dir, err)
	}
	if keep != nil && len(names) > 0 {
		names = keep(names)
	}
	return r.readNames(ctx, snap, names)
}

// readNames reads the files names (sorted here) into snap.Records.
func (r *Registry) readNames(ctx context.Context, snap ports.Snapshot, names []string) (ports.Snapshot, error) {
	sort.Strings(names)
	snap.Records = make([]domain.Record, len(names))
	if err := readAll(ctx, names, r.workers, func(i int) { snap.Records[i] = r.readOne(names[i]) }); err != nil {
		return ports.Snapshot{Dir: r.dir}, err
	}
	return snap, nil
}

// The choice ReadListed makes between listing the folder and looking up
// one name per process, measured on Linux (ext4, 2 live and 1,000 stale
// records beside their key files, 113 processes): a lookup of a name that
// is not there costs about 3.5 us, a name listed about 1 us with what
// follows it (kept, probed, sorted).
const (
	// entryBytes: a folder's size (st_size) over entryBytes is about how
	// many names it holds, rather fewer than more: on ext4 Claude Code's
	// names take 20 (<pid>.json) and 88 bytes (<pid>.<64 hex>.key) in
	// blocks seldom full, on tmpfs 20 each.
	entryBytes = 64
	// lookupNames is how many listed names one lookup costs.
	lookupNames = 4
	// listedFrom is the fewest names (by the folder's size) for which
	// the processes are listed: a smaller folder is listed whatever runs.
	listedFrom = 256
)

// ReadListed is ports.PIDRegistry's: when the folder holds more than
// lookupNames names (by its size, entryBytes each) for each process, and
// at least listedFrom, it lists the processes (live.Listed) and reads
// only the files <pid>.json of listed pids, the folder unlisted: a record
// can be live only in the file named after its running process
// (checkName: any other name is misnamed). Otherwise, or when live cannot
// list every process, it is ReadMatching(ctx, keep). A read that finds no
// file lists the folder up to its first candidate and sets Skipped when
// there is one (so "no record at all" stays exact).
func (r *Registry) ReadListed(ctx context.Context, live ports.PIDLister, keep func(names []string) []string) (ports.Snapshot, error) {
	size, err := folderSize(r.dir)
	if err != nil || size/entryBytes < listedFrom {
		return r.ReadMatching(ctx, keep) // it says what went wrong
	}
	if procs := live.Processes(); procs <= 0 || size/entryBytes < int64(lookupNames*procs) {
		return r.ReadMatching(ctx, keep)
	}
	pids, ok := live.Listed()
	if !ok {
		return r.ReadMatching(ctx, keep)
	}
	snap := ports.Snapshot{Dir: r.dir}
	names, err := pidNames(r.dir, pids)
	if err == nil && len(names) == 0 {
		var some bool
		if some, err = hasCandidate(r.dir); some {
			snap.Skipped = 1
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			snap.Missing = true
			return snap, nil
		}
		return snap, fmt.Errorf("read registry %s: %w", r.dir, err)
	}
	return r.readNames(ctx, snap, names)
}

// Candidate reports whether a directory entry name is a registry record
// candidate, from the name alone (nothing is opened to decide): it ends in
// exactly ".json" and does not start with ".". So *.key files (a session's
// secret peerToken), dot files (".4652.json", editor swap files) and temp
// files (anything after ".json": "4652.json.tmp", "4652.json~",
// "4652.json.12345") are ignored without being opened. Other *.json names
// ("5031b.json", a folder "x.json") are candidates and get a verdict.
func Candidate(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") &&
		!strings.HasSuffix(name, ".key") && name != ".json"
}

func (r *Registry) readOne(name string) domain.Record {
	path := filepath.Join(r.dir, name)
	rec := domain.Record{File: name, Path: path}
	data, mod, err := harnessfile.Read(path, MaxRecordBytes)
	rec.ModTime = mod
	if err != nil {
		rec.Problem, rec.ProblemVerdict = err.Error(), domain.VerdictUnreadable
		if harnessfile.IsTooLarge(err) {
			rec.ProblemVerdict = domain.VerdictMalformed
		}
		return fileNamePID(rec)
	}
	parsed, perr := Parse(data)
	if perr != nil && !mod.IsZero() && r.now().Sub(mod) < r.freshWindow && r.tornEvery > 0 {
		// Caught mid-write: Claude Code rewrites the record in place, a
		// write then an ftruncate (ports.RewriteGrace): read it again until
		// it is whole, for up to the grace.
		for waited := time.Duration(0); perr != nil && waited < ports.RewriteGrace; waited += r.tornEvery {
			r.sleep(r.tornEvery)
			if data2, mod2, err := harnessfile.Read(path, MaxRecordBytes); err == nil {
				rec.ModTime = mod2
				parsed, perr = Parse(data2)
			}
		}
	}
	parsed.File, parsed.Path, parsed.ModTime = rec.File, rec.Path, rec.ModTime
	if perr != nil {
		// What was read stays: the identity rule needs the name and socket.
		parsed.Problem, parsed.ProblemVerdict = perr.Error(), domain.VerdictMalformed
		return fileNamePID(parsed)
	}
	checkName(&parsed)
	return parsed
}

// fileNamePID gives a record that could not be read or parsed, and so has
// no pid of its own, the pid its file name <pid>.json says (the pid Claude
// Code 2.1.328's listing takes), for list --all and show to print. Such a
// record is never probed for liveness, so the pid only names it.
func fileNamePID(rec domain.Record) domain.Record {
	if rec.PID != 0 {
		return rec
	}
	if pid, err := strconv.Atoi(strings.TrimSuffix(rec.File, ".json")); err == nil && pid > 0 && fmt.Sprintf("%d.json", pid) == rec.File {
		rec.PID = pid
	}
	return rec
}

// checkName marks a record misnamed unless its file is exactly <pid>.json.
func checkName(rec *domain.Record) {
	want := fmt.Sprintf("%d.json", rec.PID)
	if rec.File != want {
		rec.Problem = fmt.Sprintf("file name %s is not %s for pid %d", rec.File, want, rec.PID)
		rec.ProblemVerdict = domain.VerdictMisnamed
	}
}
