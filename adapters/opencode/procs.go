package opencode

import (
	"bufio"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/adapters/procliveness"
)

// Bounds of one process scan: the lines read of each /proc/net/tcp*
// table and what is read of a command line (bytes); procliveness.Table
// bounds the processes looked at, sockowner.Sockets the open files read
// per process.
const (
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
	// KindRefused: a server or --port TUI that refused (401) the password
	// peerctl was given.
	KindRefused = "password-refused"
)

// proc is one opencode process of this user, as /proc shows it.
type proc struct {
	pid   int
	start string // field 22 of /proc/<pid>/stat
	cwd   string
	kind  string
	// addrs are the addresses to dial for the TCP listeners it holds
	// (loopback or any address; DialAddr).
	addrs []string
}

// subcommands are opencode 1.18.33's commands that are neither a TUI nor
// a server (`opencode --help`): their processes are not sessions.
var subcommands = []string{"run", "attach", "acp", "mcp", "auth", "models", "stats", "export", "import", "github", "pr",
	"upgrade", "uninstall", "session", "db", "agent", "debug", "generate", "completion", "plugin"}

// helpFlags make any opencode 1.18.33 command print its help or version
// and exit (measured: `opencode --version`, `opencode serve --help`):
// such a process is no session, however briefly it runs.
var helpFlags = []string{"-h", "--help", "-v", "--version"}

// modeOf reads a process's mode from its argv (argv[0] the program):
// KindServe, KindTUI, KindPlainTUI, or "" for another command (one that
// only prints its help or version among them).
func modeOf(args []string) string {
	for _, a := range args[min(1, len(args)):] {
		if slices.Contains(helpFlags, a) {
			return ""
		}
	}
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
// by uid whose database is db (Database: one opencode user's), with the
// addresses to dial for their listeners (their socket inodes in
// <root>/net/tcp*, read only when such a process is found). Processes
// that vanish or cannot be read are skipped.
func scanProcs(t *procliveness.Table, uid int, db string) []proc {
	var out []proc
	for _, pid := range t.PIDs() {
		dir := t.Dir(pid)
		if sockowner.OwnerUID(dir) != uid || !isOpencode(t, pid) {
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
			out[i].addrs = socketAddrs(t.Dir(out[i].pid), listeners)
		}
	}
	return out
}

// socketAddrs are the addresses to dial for the listening sockets the
// process at dir holds open (its fds "socket:[<inode>]" found in
// listeners), in fd order.
func socketAddrs(dir string, listeners map[uint64]string) []string {
	var addrs []string
	for _, ino := range sockowner.Sockets(dir) {
		if a, ok := listeners[ino]; ok && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// Listening are the addresses to dial for the TCP listeners of process
// pid ("127.0.0.2:4096", "[::1]:4096"; DialAddr), read from /proc (for
// tests and doctor).
func Listening(pid int) []string {
	return socketAddrs(filepath.Join("/proc", strconv.Itoa(pid)), readListeners("/proc"))
}

// readListeners reads /proc/net/tcp and /proc/net/tcp6 (the tables of
// our network namespace) for sockets in state LISTEN (0A) on a loopback
// or any address, by inode: inode → the address to dial (DialAddr). The
// format is the kernel's (proc(5)): "sl local_address rem_address st
// tx:rx tr:when retrnsmt uid timeout inode …", addresses as hex
// "ADDR:PORT" (sockowner.Decode).
func readListeners(procRoot string) map[uint64]string {
	out := map[uint64]string{}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(procRoot, "net", table))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for n := 0; sc.Scan() && n < maxTCPLines; n++ {
			if ino, addr, ok := parseListener(sc.Text()); ok {
				out[ino] = addr
			}
		}
		f.Close()
	}
	return out
}

// parseListener reads one line of /proc/net/tcp*: ok for a LISTEN socket
// bound to loopback (127.0.0.0/8, ::1, ::ffff:127.x) or to any address,
// with the address to dial to reach it (DialAddr).
func parseListener(line string) (inode uint64, addr string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 10 || f[3] != "0A" {
		return 0, "", false
	}
	bound, found := sockowner.Decode(f[1])
	if !found || bound.Port() == 0 {
		return 0, "", false
	}
	dial, ok := DialAddr(bound)
	if !ok {
		return 0, "", false
	}
	ino, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil || ino == 0 {
		return 0, "", false
	}
	return ino, dial.String(), true
}

// DialAddr is the address that reaches a listener bound to bound, in its
// own family: a loopback address is itself (127.0.0.2, ::1; an
// IPv4-mapped ::ffff:127.x is 127.x), a wildcard (0.0.0.0, ::) loopback of
// its family (127.0.0.1, ::1). ok is false for any other address (not
// loopback: never dialled).
func DialAddr(bound netip.AddrPort) (netip.AddrPort, bool) {
	a := bound.Addr().Unmap()
	switch {
	case a.IsLoopback():
	case a.IsUnspecified() && a.Is4():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a.IsUnspecified():
		a = netip.IPv6Loopback()
	default:
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a, bound.Port()), true
}
