package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// Health is one doctor check's result (domain.Health).
type Health = domain.Health

// Health values.
const (
	HealthOK   = domain.HealthOK
	HealthWarn = domain.HealthWarn
	HealthFail = domain.HealthFail
	HealthSkip = domain.HealthSkip
)

// DoctorEnv is what the doctor needs from the calling process.
type DoctorEnv struct {
	// Self is the calling process's pid (the start of the parent walk).
	Self int
	// Environ is the calling process's environment, KEY=VALUE.
	Environ []string
	// UID is the calling process's effective uid (socket folder ownership).
	UID int
	// GOOS is the operating system (runtime.GOOS when empty); it says
	// where Claude Code keeps a login.
	GOOS string
}

// Report is what `peerctl doctor` found. Problems holds one line per Fail,
// Warnings one line per Warn; OK is true when Problems is empty.
type Report struct {
	OK bool
	// Harnesses are the harness plug-ins' rows (ports.Harness.Doctor), in
	// plug-in order.
	Harnesses []ports.DoctorRow
	Registry  RegistryCheck
	Sockets   []SocketDirCheck
	// Reach lists the live sessions publishing a socket that nothing can
	// connect to (too long a path, absent, not a socket): each is a Warn.
	// Reachable counts the others.
	Reach     []Unreachable
	Reachable int
	Session   SessionCheck
	Problems  []string
	Warnings  []string
}

// RegistryCheck is the registry folder's state. Counts has every verdict
// word (domain.Verdicts) with its number of records, zeros included.
type RegistryCheck struct {
	Health  Health
	Dir     string
	Missing bool
	Err     error
	Counts  map[string]int
}

// SocketDirCheck is one folder holding live sessions' sockets. Healthy is
// mode 0700 owned by us; group/other write access or another owner fails
// (someone else could place a socket that receives our messages), other
// group/other bits warn.
type SocketDirCheck struct {
	Health  Health
	Dir     string
	Mode    os.FileMode // permission bits; 0 when not stat-able
	UID     int         // owner; -1 when unknown
	Ours    bool
	Problem string
	// Sessions counts the live records whose socket is in Dir.
	Sessions int
}

// SessionCheck says whether the caller runs inside a session of any
// harness: EnvVars lists the names (never values) of the harnesses'
// session variables present (ports.SessionEnv: Markers and Prefixes);
// Found is the session Whoami found (nil if none). Inside is true when
// Found is set or a marker variable is present.
type SessionCheck struct {
	Inside  bool
	EnvVars []string
	Found   *Self
	Note    string
}

// Doctor checks that peerctl can work here, without sending anything or
// starting a session: one registry read, every harness's own checks
// (ports.Harness.Doctor: its program, say), the socket folders of live
// records, and whether env runs inside a session. No login is needed
// anywhere. It does not fail; problems are in the Report.
func (s *Service) Doctor(ctx context.Context, procs ports.Processes, env DoctorEnv) Report {
	var r Report

	l, err := s.Read(ctx)
	for _, h := range s.harnesses {
		for _, row := range h.Doctor(ctx, l.Entries) {
			r.Harnesses = append(r.Harnesses, row)
			r.Problems = append(r.Problems, row.Problems...)
			r.Warnings = append(r.Warnings, row.Warnings...)
		}
	}
	r.Registry = RegistryCheck{Dir: l.Dir, Missing: l.Missing, Err: err, Counts: map[string]int{}}
	for _, v := range domain.Verdicts() {
		r.Registry.Counts[v.String()] = 0
	}
	if u := l.UnreadIn(l.DirHarness); err == nil && len(u) > 0 {
		err = u[0].Err // the other harnesses' trouble is their own doctor rows'
	}
	r.Registry.Err = err
	switch {
	case err != nil:
		r.Registry.Health = HealthFail
		r.Problems = append(r.Problems, fmt.Sprintf("registry: %v", err))
	case l.Missing:
		r.Registry.Health = HealthWarn
		r.Warnings = append(r.Warnings, fmt.Sprintf("registry: folder %s does not exist; no Claude Code session has run with this config dir", l.Dir))
	}
	for _, e := range l.Entries {
		if e.Record.Harness == l.DirHarness { // the primary harness's registry; the others count in their rows
			r.Registry.Counts[e.Verdict.String()]++
		}
	}

	r.Sockets = socketDirs(l.Live(), env.UID)
	for _, sd := range r.Sockets {
		switch sd.Health {
		case HealthFail:
			r.Problems = append(r.Problems, fmt.Sprintf("socket folder %s: %s", sd.Dir, sd.Problem))
		case HealthWarn:
			r.Warnings = append(r.Warnings, fmt.Sprintf("socket folder %s: %s", sd.Dir, sd.Problem))
		}
	}

	r.Reach, r.Reachable = unreachable(l.Live())
	for _, u := range r.Reach {
		r.Warnings = append(r.Warnings, fmt.Sprintf("session %s (%q, pid %d) is unreachable: %s", u.SessionID, u.Name, u.PID, u.Reason))
	}

	var markers map[string]bool
	r.Session.EnvVars, markers = s.sessionVars(env.Environ)
	if err == nil {
		self, werr := whoami(l, procs, env.Self, s.sessionEnvs(func(k string) string { return lookup(env.Environ, k) }))
		if werr == nil {
			r.Session.Found = &self
		} else {
			r.Session.Note = werr.Error()
		}
	}
	r.Session.Inside = r.Session.Found != nil
	for _, k := range r.Session.EnvVars {
		r.Session.Inside = r.Session.Inside || markers[k]
	}

	goos := env.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	r.OK = len(r.Problems) == 0
	return r
}

// Unreachable is a live session whose published socket nothing can
// connect to; Reason says why (socketUnreachable).
type Unreachable struct {
	SessionID  string
	Name       string
	PID        int
	SocketPath string
	Reason     string
}

// unreachable checks the socket file of every live session that publishes
// one (an entry not addressable for another reason, such as no name, is
// not counted, nor one reached without a socket file: by Codex's queue,
// or at an opencode server's TCP address): it returns those nothing can
// connect to, and how many others.
func unreachable(live []domain.Entry) (out []Unreachable, reachable int) {
	for _, e := range live {
		if !e.Addressable || e.Record.SocketFile() == "" {
			continue
		}
		why := entryUnreachable(e)
		if why == "" {
			reachable++
			continue
		}
		r := e.Record
		out = append(out, Unreachable{SessionID: r.SessionID, Name: r.Name, PID: r.PID, SocketPath: r.SocketPath, Reason: why})
	}
	return out, reachable
}

// socketDirs checks the folder of every live session's socket file
// (domain.Record.SocketFile: a TCP address has no folder), with how many
// sessions each holds.
func socketDirs(live []domain.Entry, uid int) []SocketDirCheck {
	count := map[string]int{}
	for _, e := range live {
		if f := e.Record.SocketFile(); f != "" {
			count[filepath.Dir(f)]++
		}
	}
	dirs := make([]string, 0, len(count))
	for d := range count {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	out := make([]SocketDirCheck, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, checkSocketDir(d, uid, count[d]))
	}
	return out
}

func checkSocketDir(dir string, uid, sessions int) SocketDirCheck {
	c := SocketDirCheck{Dir: dir, UID: -1, Sessions: sessions}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		c.Health, c.Problem = HealthWarn, fmt.Sprintf("cannot stat: %v (a live session's socket should be here)", err)
		return c
	case !fi.IsDir():
		c.Health, c.Problem = HealthFail, fmt.Sprintf("not a directory (%s)", fi.Mode().Type())
		return c
	}
	c.Mode = fi.Mode().Perm()
	if owner, ok := fileOwner(fi); ok {
		c.UID = owner
		c.Ours = c.UID == uid
	}
	switch {
	case c.UID >= 0 && !c.Ours:
		c.Health, c.Problem = HealthFail, fmt.Sprintf("owned by uid %d, not us (uid %d): another user could plant a socket there", c.UID, uid)
	case c.Mode&0o022 != 0:
		c.Health, c.Problem = HealthFail, fmt.Sprintf("mode %04o lets group or others write: another user could plant a socket there; want 0700", c.Mode)
	case c.Mode&0o077 != 0:
		c.Health, c.Problem = HealthWarn, fmt.Sprintf("mode %04o, want 0700", c.Mode)
	}
	return c
}

// sessionVars returns the sorted names of the harnesses' session
// variables in environ (ports.SessionEnv: Markers, and names with one of
// Prefixes), and the markers. Values are never returned: some are secrets.
func (s *Service) sessionVars(environ []string) (names []string, markers map[string]bool) {
	markers = map[string]bool{}
	var prefixes []string
	for _, h := range s.harnesses {
		se := h.SessionEnv()
		for _, m := range se.Markers {
			markers[m] = true
		}
		prefixes = append(prefixes, se.Prefixes...)
	}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if markers[k] || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names, markers
}

func lookup(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
