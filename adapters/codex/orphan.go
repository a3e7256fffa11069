package codex

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's starttime: 100
// on every Linux ABI.
const clockTicks = 100

// orphan is a thread a Codex TUI whose daemon is gone may still show.
type orphan struct {
	id, path, cwd string
	tuis          []proc // the daemon-mode TUIs (clients) in its folder
}

// orphans lists, when no daemon serves the home (no control socket, or
// nothing listens on it: a daemon killed or crashed), the threads its
// clients may still show: a daemon-mode TUI whose daemon is gone keeps
// its screen, says "Reconnecting to server…" and takes no message, not
// even one typed into it (measured on 0.171.0, over a minute), and
// holds no file of its thread (the daemon held them). So a thread is
// taken to be shown by such a TUI when its rollout's session_meta names
// the TUI's folder and the rollout was written since the TUI started
// (btime of <procRoot>/stat plus its start ticks; every thread of the
// folder when that cannot be read). Nothing of Codex is written.
func (r *Registry) orphans(procs []proc, daemonPID int) []orphan {
	var tuis []proc
	for _, p := range procs {
		if p.role(daemonPID) == KindClient {
			tuis = append(tuis, p)
		}
	}
	if len(tuis) == 0 {
		return nil
	}
	boot := bootTime(r.procRoot)
	files, _ := filepath.Glob(filepath.Join(r.home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	var out []orphan
	for _, f := range files {
		id := rolloutThread(f)
		fi, err := os.Stat(f)
		if id == "" || err != nil {
			continue
		}
		var meta *sessionMeta
		var shown []proc
		for _, p := range tuis {
			if started, ok := startedAt(boot, p.start); ok && fi.ModTime().Before(started) {
				continue
			}
			if meta == nil {
				m, err := readSessionMeta(f)
				if err != nil || m.ID != id {
					break
				}
				meta = &m
			}
			if filepath.Clean(meta.Cwd) == filepath.Clean(p.cwd) {
				shown = append(shown, p)
			}
		}
		if len(shown) > 0 {
			out = append(out, orphan{id: id, path: f, cwd: meta.Cwd, tuis: shown})
		}
	}
	return out
}

// record is the orphan's record for the live read: the TUI's pid (the
// first, when several run in the folder), not live (stale: the daemon
// that served it is gone), saying why.
func (o orphan) record(sock string) domain.Record {
	rec := domain.Record{Harness: Kind, File: o.id, SessionID: o.id, Kind: KindClient, Cwd: o.cwd, Path: o.path,
		SocketPath: sock, PID: o.tuis[0].pid, ProcStart: o.tuis[0].start, Name: oneLine(firstUserMessage(o.path))}
	if meta, err := readSessionMeta(o.path); err == nil {
		rec.Version = meta.CLIVersion
	}
	rec.Problem, rec.ProblemVerdict = fmt.Sprintf("its app-server daemon is gone (nothing listens on its control socket), while %s, a client of that daemon in %s, still runs and may show the thread, saying \"Reconnecting to server…\": it takes no message until it is restarted", o.who(), o.cwd), domain.VerdictStale
	return rec
}

// problem is the orphan's Problem among the known threads: what the user
// can do.
func (o orphan) problem() string {
	return fmt.Sprintf("nothing was sent: %s may still show it, but the app-server daemon it ran on is gone, so neither transport reaches it there; quit that TUI and run `codex resume %s` in %s (which starts a new daemon), then send again", o.who(), o.id, o.cwd)
}

// who names the orphan's TUIs.
func (o orphan) who() string {
	if len(o.tuis) == 1 {
		return fmt.Sprintf("Codex TUI pid %d", o.tuis[0].pid)
	}
	return fmt.Sprintf("one of the Codex TUIs pids %s", pids(o.tuis))
}

// markOrphans gives each known thread an orphan names its Problem.
func markOrphans(recs []domain.Record, orphans []orphan) []domain.Record {
	byID := map[string]orphan{}
	for _, o := range orphans {
		byID[o.id] = o
	}
	for i, rec := range recs {
		if o, ok := byID[rec.SessionID]; ok && recs[i].Problem == "" {
			recs[i].Problem, recs[i].ProblemVerdict = o.problem(), domain.VerdictStale
		}
	}
	return recs
}

// bootTime is the machine's boot time (btime of <procRoot>/stat); zero
// when unknown.
func bootTime(procRoot string) time.Time {
	f, err := openRegular(filepath.Join(procRoot, "stat"))
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
}

// startedAt is when a process started: boot plus its start ticks.
func startedAt(boot time.Time, ticks string) (time.Time, bool) {
	n, err := strconv.ParseUint(ticks, 10, 64)
	if boot.IsZero() || err != nil {
		return time.Time{}, false
	}
	return boot.Add(time.Duration(n) * (time.Second / clockTicks)), true
}
