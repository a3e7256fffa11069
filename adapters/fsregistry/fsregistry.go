// Package fsregistry reads Claude Code's live-session registry folder,
// <config dir>/sessions/, into domain records. It only ever reads: it never
// writes, renames or deletes, never follows a symlink, and never opens a
// *.key file (those hold a session's peerToken, a secret).
//
// The file format is Claude Code's <pid>.json as observed in 2.1.224 and
// 2.1.328 (docs/CLAUDE-CODE-FACTS.md). Parsing is tolerant where Claude Code
// is (unknown fields ignored, procStart as string or number) and strict
// where a guess could mislead (trailing garbage, wrong pid, oversize files).
package fsregistry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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
	// tornRetry is how long to wait before reading a file caught mid-write
	// once more; freshWindow is how recent its mtime must be to count as such.
	tornRetry   time.Duration
	freshWindow time.Duration
	now         func() time.Time
	// workers fixes the size of the read pool (benchmarks); 0 picks it.
	workers int
	// sleep waits out tornRetry (time.Sleep; tests replace it to rewrite
	// the file inside the retry window).
	sleep func(time.Duration)
}

var (
	_ ports.Registry          = (*Registry)(nil)
	_ ports.SelectiveRegistry = (*Registry)(nil)
)

// New returns a Registry for dir, the sessions folder itself (see
// SessionsDir to derive it from a config dir).
func New(dir string) *Registry {
	return &Registry{dir: dir, tornRetry: 50 * time.Millisecond, freshWindow: time.Second, now: time.Now, sleep: time.Sleep}
}

// Dir returns the folder this registry reads.
func (r *Registry) Dir() string { return r.dir }

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

// ReadMatching is Read restricted to the candidate files whose base name
// keep accepts (nil keeps every one): the others are neither opened nor
// returned. It lets a caller that needs only some records (the live ones,
// say) skip the rest unread; see ports.SelectiveRegistry.
func (r *Registry) ReadMatching(ctx context.Context, keep func(name string) bool) (ports.Snapshot, error) {
	snap := ports.Snapshot{Dir: r.dir}
	names, err := candidateNames(r.dir, keep)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			snap.Missing = true
			return snap, nil
		}
		return snap, fmt.Errorf("read registry %s: %w", r.dir, err)
	}
	sort.Strings(names)
	snap.Records = make([]domain.Record, len(names))
	if err := readAll(ctx, names, r.workers, func(i int) { snap.Records[i] = r.readOne(names[i]) }); err != nil {
		return ports.Snapshot{Dir: r.dir}, err
	}
	return snap, nil
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
	data, mod, problem := readRegular(path)
	rec.ModTime = mod
	if problem != nil {
		rec.Problem, rec.ProblemVerdict = problem.text, problem.verdict
		return rec
	}
	parsed, perr := Parse(data)
	if perr != nil && !mod.IsZero() && r.now().Sub(mod) < r.freshWindow && r.tornRetry > 0 {
		// Caught mid-write: Claude Code writes the record in steps.
		r.sleep(r.tornRetry)
		if data2, mod2, problem2 := readRegular(path); problem2 == nil {
			rec.ModTime = mod2
			parsed, perr = Parse(data2)
		}
	}
	parsed.File, parsed.Path, parsed.ModTime = rec.File, rec.Path, rec.ModTime
	if perr != nil {
		// What was read stays: the identity rule needs the name and socket.
		parsed.Problem, parsed.ProblemVerdict = perr.Error(), domain.VerdictMalformed
		return parsed
	}
	checkName(&parsed)
	return parsed
}

// checkName marks a record misnamed unless its file is exactly <pid>.json.
func checkName(rec *domain.Record) {
	want := fmt.Sprintf("%d.json", rec.PID)
	if rec.File != want {
		rec.Problem = fmt.Sprintf("file name %s is not %s for pid %d", rec.File, want, rec.PID)
		rec.ProblemVerdict = domain.VerdictMisnamed
	}
}

type fileProblem struct {
	verdict domain.Verdict
	text    string
}

// readRegular reads a regular file of at most MaxRecordBytes without
// following symlinks or blocking, on the raw descriptor (lstat; open with
// O_NOFOLLOW|O_NONBLOCK, so a symlink swapped in after lstat, or a FIFO,
// cannot make us follow or block; fstat; one read sized from fstat), and
// words why a file cannot be used. The modification time is lstat's.
func readRegular(path string) ([]byte, time.Time, *fileProblem) {
	var lst unix.Stat_t
	if err := unix.Lstat(path, &lst); err != nil {
		return nil, time.Time{}, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", err)}
	}
	mod := time.Unix(lst.Mtim.Unix())
	if p := notRegular(lst, "symlink, not followed"); p != nil {
		return nil, mod, p
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("open: %v", err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("stat: %v", err)}
	}
	if p := notRegular(st, "replaced while opened"); p != nil {
		return nil, mod, p
	}
	buf := make([]byte, 0, st.Size+1) // one byte more to see EOF (or growth) in the same read
	for int64(len(buf)) <= MaxRecordBytes {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, mod, &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("read: %v", err)}
		case n == 0:
			return buf, mod, nil
		}
		buf = buf[:len(buf)+n]
	}
	return nil, mod, &fileProblem{domain.VerdictMalformed, fmt.Sprintf("grew over the %d-byte cap while read", MaxRecordBytes)}
}

// notRegular words why st is not a regular file within the size cap; a
// symlink gets the given words.
func notRegular(st unix.Stat_t, symlink string) *fileProblem {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &fileProblem{domain.VerdictUnreadable, symlink}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &fileProblem{domain.VerdictUnreadable, fmt.Sprintf("not a regular file (%s)", fileType(st.Mode))}
	case st.Size > MaxRecordBytes:
		return &fileProblem{domain.VerdictMalformed, fmt.Sprintf("%d bytes, over the %d-byte cap; not read", st.Size, MaxRecordBytes)}
	}
	return nil
}

// fileType renders a stat mode's file type as os.FileMode does ("d---------").
func fileType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
