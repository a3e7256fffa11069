package codex

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

// Bounds of one process scan: the processes looked at, and the open
// files read per process.
const (
	maxProcs = 1 << 16
	maxFDs   = 4096
)

// proc is one Codex process of a home, as /proc shows it.
type proc struct {
	pid   int
	start string // field 22 of /proc/<pid>/stat
	cwd   string
	args  []string
	// locks are the thread ids whose writer lock
	// ($CODEX_HOME/thread-writer-locks/<id>.lock) the process holds open.
	locks []string
	// rollouts are the rollout files it holds open, by thread id.
	rollouts map[string]string
	// ppid is its parent's pid (0: unknown).
	ppid int
	// daemonChild is set when the daemon is among its ancestors.
	daemonChild bool
}

// maxAncestry bounds the parents walked from one process to the daemon.
const maxAncestry = 64

// underDaemon marks the processes descended from the daemon (daemonPID):
// the sandbox helpers and tool processes it starts for a turn are named
// codex, sit in the thread's folder and carry CODEX_HOME, but nobody has
// the thread open through them (issue 28, case 6). The parentage is read
// from the scanned processes' ppids and, for parents not among them,
// from tree.
func underDaemon(procs []proc, daemonPID int, tree ports.Processes) {
	if daemonPID <= 0 {
		return
	}
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	for i := range procs {
		pid := procs[i].ppid
		for n := 0; n < maxAncestry && pid > 1; n++ {
			if pid == daemonPID {
				procs[i].daemonChild = true
				break
			}
			next, ok := parent[pid]
			if !ok {
				var err error
				if next, err = tree.Parent(pid); err != nil {
					break
				}
			}
			pid = next
		}
	}
}

// role says what a Codex process of the home is to peerctl.
// roleExec is a headless `codex exec` run: it holds its thread's writer
// lock and rollout as a --no-daemon TUI does (measured on 0.171.0), but
// nobody has the thread open: it prints its own answer and exits, and a
// text queued for it is never seen.
const roleExec = "exec"

func (p proc) role(daemonPID int) string {
	switch {
	case p.pid == daemonPID:
		return "daemon"
	case p.daemonChild:
		return "daemon" // a sandbox helper or tool the daemon runs: no client
	case len(p.args) > 1 && p.args[1] == "app-server":
		return "daemon" // the daemon's helper (pid-update-loop), or another app-server
	case len(p.args) > 1 && p.args[1] == "exec":
		return roleExec // checked before the locks: an exec run holds the writer lock too
	case len(p.locks) > 0:
		return KindNoDaemon
	case len(p.args) > 1 && (p.args[1] == "queue" || p.args[1] == "mcp" || p.args[1] == "app-server-daemon"):
		return "tool" // a short-lived command, not a person's client
	}
	return KindClient
}

// scanProcs reads, under procRoot, the processes named "codex" (the
// native binary's comm) of home: those holding a file of home open, or
// whose environment makes home their Codex home (homeOf). A daemon-mode
// TUI holds no file of home for long (measured on 0.171.0: after about
// 40 idle minutes it held only its terminal and its connection to the
// daemon), so the environment is what finds it. Processes that vanish or
// cannot be read are skipped: another user's, say.
func scanProcs(procRoot, home string) []proc {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	home = filepath.Clean(home)
	// A process's open files are named by their real paths: a home that
	// is (or is under) a symlink is matched by its real path too.
	homes := []string{home}
	if real, err := filepath.EvalSymlinks(home); err == nil && real != home {
		homes = append(homes, real)
	}
	var out []proc
	for i, e := range ents {
		if i >= maxProcs {
			break
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procRoot, e.Name())
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "codex" {
			continue
		}
		p := proc{pid: pid, rollouts: map[string]string{}}
		ours := false
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for j, fd := range fds {
			if j >= maxFDs {
				break
			}
			target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			rel, in := "", false
			for _, h := range homes {
				if rel, in = strings.CutPrefix(target, h+string(filepath.Separator)); in {
					break
				}
			}
			if err != nil || !in {
				continue
			}
			ours = true
			if id, ok := strings.CutPrefix(rel, "thread-writer-locks"+string(filepath.Separator)); ok {
				if id, ok := strings.CutSuffix(id, ".lock"); ok && IsUUID(id) {
					p.locks = append(p.locks, id)
				}
			}
			if id := rolloutThread(target); id != "" {
				p.rollouts[id] = target
			}
		}
		if !ours && !slices.ContainsFunc(homes, func(h string) bool { return homeOf(dir, h) }) {
			continue
		}
		p.cwd, _ = os.Readlink(filepath.Join(dir, "cwd"))
		if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
			p.args = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		p.start, _ = procliveness.StartTime(procRoot, pid)
		p.ppid, _ = procliveness.NewTree(procRoot).Parent(pid)
		out = append(out, p)
	}
	return out
}

// rolloutThread is the thread id of a rollout path
// (sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl), "" for another
// file.
func rolloutThread(path string) string {
	base := filepath.Base(path)
	if !strings.HasPrefix(base, "rollout-") || !strings.HasSuffix(base, ".jsonl") {
		return ""
	}
	stem := strings.TrimSuffix(base, ".jsonl")
	if len(stem) < 36 {
		return ""
	}
	if id := stem[len(stem)-36:]; IsUUID(id) {
		return id
	}
	return ""
}

// maxEnviron bounds the environment read of one process (bytes).
const maxEnviron = 1 << 20

// homeOf reports whether the process at dir (/proc/<pid>) has home as its
// Codex home, as Codex resolves it: $CODEX_HOME, else $HOME/.codex.
func homeOf(dir, home string) bool {
	f, err := os.Open(filepath.Join(dir, "environ"))
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
	var codexHome, userHome string
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codexHome = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	switch {
	case codexHome != "" && !filepath.IsAbs(codexHome):
		cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
		return err == nil && filepath.Join(cwd, codexHome) == home
	case codexHome != "":
		return filepath.Clean(codexHome) == home
	case userHome != "":
		return filepath.Join(userHome, ".codex") == home
	}
	return false
}
