package codex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/ports"
)

// Bounds of one process scan: the open files read per process, and what
// is read of its name and command line (bytes); procliveness.Table bounds
// the processes looked at.
const (
	maxFDs     = 4096
	maxComm    = 64
	maxCmdline = 8 << 20
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
	// descendant is set when the daemon or another scanned Codex process
	// of the home is among its ancestors.
	descendant bool
}

// maxAncestry bounds the parents walked from one process.
const maxAncestry = 64

// markDescendants marks the processes descended from the daemon
// (daemonPID) or from any other of procs: the sandbox helpers and tool
// processes a daemon, a --no-daemon TUI or a `codex exec` run starts for
// a turn are named codex, sit in the thread's folder and carry
// CODEX_HOME, but nobody has a thread open through them (issue 28, case
// 6). The parentage is read from the scanned processes' ppids and, for
// parents not among them (a shell between), from tree. A Codex TUI a
// person starts from inside a Codex tool call is such a descendant too,
// and is not counted: it runs in the tool's sandbox.
func markDescendants(procs []proc, daemonPID int, tree ports.Processes) {
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	for i := range procs {
		pid := procs[i].ppid
		for n := 0; n < maxAncestry && pid > 1; n++ {
			_, scanned := parent[pid]
			if pid == daemonPID || scanned {
				procs[i].descendant = true
				break
			}
			next, err := tree.Parent(pid)
			if err != nil {
				break
			}
			pid = next
		}
	}
}

// Roles of a Codex process of the home that are not record kinds (see
// role).
const (
	roleDaemon = "daemon" // the daemon, its helper, or another app-server
	roleHelper = "helper" // a sandbox helper or tool a Codex process runs
	roleTool   = "tool"   // a short-lived command (queue, mcp, login…)
)

// helperArg0s are the names Codex runs itself under for a helper (the
// arg0 dispatch of 0.171.0: the Linux sandbox, apply_patch); helperArg1
// starts the hidden first argument that does the same.
var helperArg0s = []string{"codex-linux-sandbox", "apply_patch", "applypatch"}

const helperArg1 = "--codex-run-as-"

// Global options of `codex` that take a value (`codex --help`, 0.171.0),
// and the one that takes a list: -i/--image takes every word up to the
// next option (clap, num_args 1..: measured, `codex -i a.png exec` is the
// TUI). Any other option is taken for a flag: an unknown option is an
// error to Codex, so such a process does not run for long.
var (
	valueOpts = []string{"-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env",
		"-m", "--model", "--local-provider", "-p", "--profile", "-s", "--sandbox", "-C", "--cd",
		"--add-dir", "-a", "--ask-for-approval"}
	listOpts = []string{"-i", "--image"}
	// subcommands are `codex`'s (`codex --help`, 0.171.0, with the hidden
	// responses-api-proxy and execpolicy); another first word is the
	// TUI's prompt (`codex "hello"`).
	subcommands = []string{"agents", "exec", "review", "login", "logout", "mcp", "plugin", "app-server",
		"remote-control", "completion", "update", "doctor", "sandbox", "debug", "apply", "resume", "queue",
		"archive", "delete", "migrate-rollouts", "migrate-nfs-db", "unarchive", "fork", "cloud",
		"exec-server", "features", "help", "responses-api-proxy", "execpolicy"}
	// aliases are the subcommands' short names.
	aliases = map[string]string{"e": "exec", "a": "apply"}
)

// subcommand is the subcommand of a `codex` command line ("" for none:
// the interactive TUI, with or without a prompt), read as clap reads it
// (measured on 0.171.0): past the global options and their values (`-c
// k=v`, `-ck=v`, `--config=k=v`); after `--` the next word is the
// prompt. An alias is its subcommand's name (`e` is "exec"); "--help"
// and "--version" are "help".
func subcommand(args []string) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case a == "-h" || a == "--help" || a == "-V" || a == "--version":
			return "help"
		case slices.Contains(valueOpts, a):
			i++ // its value
		case slices.Contains(listOpts, a):
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
		case strings.HasPrefix(a, "-"):
			// --opt=value, -cVALUE, or a flag: one word.
		case aliases[a] != "":
			return aliases[a]
		case slices.Contains(subcommands, a):
			return a
		default:
			return "" // the prompt
		}
	}
	return ""
}

// helper reports whether args are a Codex helper's: the sandbox or
// apply_patch, dispatched by arg0 or a hidden first argument.
func helper(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return slices.Contains(helperArg0s, filepath.Base(args[0])) || len(args) > 1 && strings.HasPrefix(args[1], helperArg1)
}

// role says what a Codex process of the home is to peerctl: a record kind
// (KindClient: a daemon-mode TUI; KindNoDaemon: a --no-daemon TUI holding
// its threads; KindExec: a headless run holding its thread), or one of
// the roles above, none a client. A TUI is `codex` with no subcommand, or
// `resume`/`fork`; a subcommand past the global options (see subcommand)
// decides. An exec run holds its thread's writer lock and rollout as a
// --no-daemon TUI does (measured on 0.171.0), but nobody has the thread
// open: it prints its own answer and exits, and a text queued for it is
// never seen; so does any other subcommand holding a writer lock (`codex
// review`).
func (p proc) role(daemonPID int) string {
	switch {
	case p.pid == daemonPID:
		return roleDaemon
	case p.descendant || helper(p.args):
		return roleHelper
	}
	switch sub := subcommand(p.args); {
	case sub == "" || sub == "resume" || sub == "fork":
		if len(p.locks) > 0 {
			return KindNoDaemon
		}
		return KindClient
	case sub == "app-server":
		return roleDaemon // the daemon's helper (pid-update-loop), or another app-server
	case sub == "exec" || sub == "review" || len(p.locks) > 0:
		return KindExec
	}
	return roleTool
}

// run is the subcommand a headless run (KindExec) was started with, for
// its reason: "exec", "review"….
func (p proc) run() string {
	if sub := subcommand(p.args); sub != "" {
		return sub
	}
	return "exec"
}

// scanProcs reads, in the process table t, the processes named "codex" (the
// native binary's comm) of home: those holding a file of home open, or
// whose environment makes home their Codex home (homeOf). A daemon-mode
// TUI holds no file of home for long (measured on 0.171.0: after about
// 40 idle minutes it held only its terminal and its connection to the
// daemon), so the environment is what finds it. Processes that vanish or
// cannot be read are skipped: another user's, say.
func scanProcs(t *procliveness.Table, home string) []proc {
	home = filepath.Clean(home)
	// A process's open files are named by their real paths: a home that
	// is (or is under) a symlink is matched by its real path too.
	homes := []string{home}
	if real := realPath(home); real != home {
		homes = append(homes, real)
	}
	var out []proc
	for _, pid := range t.PIDs() {
		comm, err := t.File(pid, "comm", maxComm)
		if err != nil || strings.TrimSpace(string(comm)) != "codex" {
			continue
		}
		dir := t.Dir(pid)
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
		if !ours && !homeOf(t, pid, homes) {
			continue
		}
		p.cwd, _ = t.Link(pid, "cwd")
		if b, err := t.File(pid, "cmdline", maxCmdline); err == nil {
			p.args = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
		p.start, _ = procliveness.StartTime(t.Root(), pid)
		p.ppid, _ = procliveness.NewTree(t.Root()).Parent(pid)
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

// homeOf reports whether process pid of t has one of homes (peerctl's
// home, clean and resolved) as its Codex home, as Codex resolves it:
// $CODEX_HOME (relative to its cwd), else $HOME/.codex. The process's home
// is compared as written and through its symlinks (a TUI given a link to
// the home peerctl names by its target, or the other way round, is of that
// home; issue 28, case 5).
func homeOf(t *procliveness.Table, pid int, homes []string) bool {
	b, _ := t.File(pid, "environ", maxEnviron) // none read: no home
	var codexHome, userHome string
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			codexHome = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			userHome = v
		}
	}
	var theirs string
	switch {
	case codexHome != "" && !filepath.IsAbs(codexHome):
		cwd, err := t.Link(pid, "cwd")
		if err != nil {
			return false
		}
		theirs = filepath.Join(cwd, codexHome)
	case codexHome != "":
		theirs = filepath.Clean(codexHome)
	case userHome != "":
		theirs = filepath.Join(userHome, ".codex")
	default:
		return false
	}
	return slices.Contains(homes, theirs) || slices.Contains(homes, realPath(theirs))
}

// realPath is path with its symlinks resolved (filepath.EvalSymlinks),
// else path cleaned.
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}
