package opencode

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/procliveness"
)

// Bounds of one process scan: the open files read per process, the lines
// read of each /proc/net/tcp* table, and what is read of a command line
// (bytes); procliveness.Table bounds the processes looked at.
const (
	maxFDs      = 4096
	maxTCPLines = 1 << 18
	maxCmdline  = 8 << 20
)

// Process modes (Record.Kind of an opencode record), read from the
// command line (opencode-ai 1.18.33).
const (
	// KindServe: `opencode serve` (or `web`), a headless server.
	KindServe = "serve"
	// KindTUI: a TUI started with --port, --hostname or --mdns, which
	// listens as a server does.
	KindTUI = "tui"
	// KindPlainTUI: a TUI started without them: it listens on nothing and
	// cannot be reached by any means opencode supports.
	KindPlainTUI = "tui-plain"
	// KindLocked: a server or --port TUI that asks for a password
	// (OPENCODE_SERVER_PASSWORD set there) that peerctl was not given.
	KindLocked = "locked"
)

// proc is one opencode process of this user, as /proc shows it.
type proc struct {
	pid   int
	start string // field 22 of /proc/<pid>/stat
	cwd   string
	kind  string
	// ports are the TCP ports it listens on (loopback or any address).
	ports []int
}

// subcommands are opencode 1.18.33's commands that are neither a TUI nor
// a server (`opencode --help`): their processes are not sessions.
var subcommands = []string{"run", "attach", "acp", "mcp", "auth", "models", "stats", "export", "import", "github", "pr",
	"upgrade", "uninstall", "session", "db", "agent", "debug", "generate", "completion", "plugin"}

// modeOf reads a process's mode from its argv (argv[0] the program):
// KindServe, KindTUI, KindPlainTUI, or "" for another command.
func modeOf(args []string) string {
	listens := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "serve" || a == "web":
			return KindServe
		case a == "--port" || a == "--hostname" || a == "--mdns" ||
			strings.HasPrefix(a, "--port=") || strings.HasPrefix(a, "--hostname=") || strings.HasPrefix(a, "--mdns="):
			listens = true
		case strings.HasPrefix(a, "-"):
		case slices.Contains(subcommands, a):
			return ""
		}
	}
	if listens {
		return KindTUI
	}
	return KindPlainTUI
}

// isOpencode reports whether process pid of t runs opencode: its
// executable's base name starts with "opencode" (the native binary of
// opencode-ai, node_modules/opencode-<os>-<arch>/bin/opencode).
func isOpencode(t *procliveness.Table, pid int) bool {
	exe, err := t.Link(pid, "exe")
	if err != nil {
		return false
	}
	return strings.HasPrefix(filepath.Base(strings.TrimSuffix(exe, " (deleted)")), "opencode")
}

// scanProcs reads, in the process table t, the opencode processes owned
// by uid whose database is db (Database: one opencode user's), with their
// listening ports (their socket inodes in <root>/net/tcp*, read only when
// such a process is found). Processes that vanish or cannot be read are
// skipped.
func scanProcs(t *procliveness.Table, uid int, db string) []proc {
	var out []proc
	for _, pid := range t.PIDs() {
		dir := t.Dir(pid)
		if owner(dir) != uid || !isOpencode(t, pid) {
			continue
		}
		b, err := t.File(pid, "cmdline", maxCmdline)
		if err != nil {
			continue
		}
		p := proc{pid: pid, kind: modeOf(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))}
		if p.kind == "" {
			continue
		}
		p.cwd, _ = t.Link(pid, "cwd")
		if databaseOf(t, pid, p.cwd) != db {
			continue
		}
		if p.start, err = procliveness.StartTime(t.Root(), pid); err != nil {
			continue
		}
		out = append(out, p)
	}
	if len(out) > 0 {
		listeners := readListeners(t.Root())
		for i := range out {
			out[i].ports = socketPorts(t.Dir(out[i].pid), listeners)
		}
	}
	return out
}

// socketPorts are the ports of the listening sockets the process at dir
// holds open (its fds "socket:[<inode>]" found in listeners), in fd order.
func socketPorts(dir string, listeners map[uint64]int) []int {
	fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
	var ports []int
	for j, fd := range fds {
		if j >= maxFDs {
			break
		}
		target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil {
			continue
		}
		ino, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(ino, "]"), 10, 64)
		if err != nil {
			continue
		}
		if port, ok := listeners[n]; ok && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	return ports
}

// ListeningPorts are the TCP ports process pid listens on, read from
// /proc (for tests and doctor).
func ListeningPorts(pid int) []int {
	return socketPorts(filepath.Join("/proc", strconv.Itoa(pid)), readListeners("/proc"))
}

// readListeners reads /proc/net/tcp and /proc/net/tcp6 (the tables of
// our network namespace) for sockets in state LISTEN (0A) on a loopback
// or any address, by inode: inode → local port. The format is the
// kernel's (proc(5)): "sl local_address rem_address st tx:rx tr:when
// retrnsmt uid timeout inode …", addresses as hex "ADDR:PORT".
func readListeners(procRoot string) map[uint64]int {
	out := map[uint64]int{}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for n := 0; sc.Scan() && n < maxTCPLines; n++ {
			if ino, port, ok := parseListener(sc.Text()); ok {
				out[ino] = port
			}
		}
		f.Close()
	}
	return out
}

// parseListener reads one line of /proc/net/tcp*: ok for a LISTEN socket
// bound to loopback (127.0.0.0/8, ::1, ::ffff:127.x) or to any address.
func parseListener(line string) (inode uint64, port int, ok bool) {
	f := strings.Fields(line)
	if len(f) < 10 || f[3] != "0A" {
		return 0, 0, false
	}
	addr, portHex, found := strings.Cut(f[1], ":")
	if !found {
		return 0, 0, false
	}
	p, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || p == 0 {
		return 0, 0, false
	}
	if !loopbackOrAny(addr) {
		return 0, 0, false
	}
	ino, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil || ino == 0 {
		return 0, 0, false
	}
	return ino, int(p), true
}

// loopbackOrAny reads an address of /proc/net/tcp* (hex, each 32-bit word
// in host byte order; little-endian here): 8 digits for IPv4, 32 for IPv6.
func loopbackOrAny(addr string) bool {
	switch len(addr) {
	case 8:
		return addr == "00000000" || strings.HasSuffix(addr, "7F") // 127.x.x.x: its first byte is the word's last
	case 32:
		switch addr {
		case "00000000000000000000000000000000", "00000000000000000000000001000000":
			return true // :: and ::1
		}
		// ::ffff:127.x.x.x
		return strings.HasPrefix(addr, "0000000000000000FFFF0000") && strings.HasSuffix(addr, "7F")
	}
	return false
}
