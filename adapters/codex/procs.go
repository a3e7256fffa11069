package codex

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
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
}

// role says what a Codex process of the home is to peerctl.
func (p proc) role(daemonPID int) string {
	switch {
	case p.pid == daemonPID:
		return "daemon"
	case len(p.args) > 1 && p.args[1] == "app-server":
		return "daemon" // the daemon's helper (pid-update-loop), or another app-server
	case len(p.locks) > 0:
		return domain.CodexKindNoDaemon
	case len(p.args) > 1 && (p.args[1] == "queue" || p.args[1] == "exec" || p.args[1] == "mcp" || p.args[1] == "app-server-daemon"):
		return "tool" // a short-lived command, not a person's client
	}
	return domain.CodexKindClient
}

// scanProcs reads, under procRoot, the processes named "codex" (the
// native binary's comm) that hold a file of home open. Processes that
// vanish or cannot be read are skipped: another user's, say.
func scanProcs(procRoot, home string) []proc {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	home = filepath.Clean(home)
	locks := filepath.Join(home, "thread-writer-locks") + string(filepath.Separator)
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
			if err != nil || !strings.HasPrefix(target, home+string(filepath.Separator)) {
				continue
			}
			ours = true
			if id, ok := strings.CutPrefix(target, locks); ok {
				if id, ok := strings.CutSuffix(id, ".lock"); ok && domain.IsUUID(id) {
					p.locks = append(p.locks, id)
				}
			}
			if id := rolloutThread(target); id != "" {
				p.rollouts[id] = target
			}
		}
		if !ours {
			continue
		}
		p.cwd, _ = os.Readlink(filepath.Join(dir, "cwd"))
		if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
			p.args = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		p.start, _ = procliveness.StartTime(procRoot, pid)
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
	if id := stem[len(stem)-36:]; domain.IsUUID(id) {
		return id
	}
	return ""
}
