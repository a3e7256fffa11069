//go:build linux

// Package livessh starts a second machine on this one for live tests of
// peerctl across hosts: a real OpenSSH server (Debian's openssh-server,
// installed by scripts/install-test-deps.sh) on 127.0.0.1-3:<free port>,
// inside a pid namespace of its own (unshare --pid --fork --mount-proc), for
// a Unix user the test creates, with a key pair and known_hosts made for the
// run and host-key checking on. Processes started through it (a Claude Code
// session, the far side's peerctl) see another pid namespace, so their
// records carry another pidDomain: read locally they are foreign, read by a
// peerctl behind the sshd they are live — as on another machine.
//
// Everything is loopback, so it works under scripts/offline.sh. Ending the
// test kills the whole namespace (sshd is its pid 1) and removes the user
// and every file made for it.
package livessh

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/test/livecc"
)

// The server listens on three loopback addresses, one per alias: ssh
// shares a connection between every alias that reaches the same address,
// port and user (ControlPath %C), and the unknown-key and wrong-key aliases
// must each make their own, with its own host-key check.
const knownAddr, unknownAddr, wrongAddr = "127.0.0.1", "127.0.0.2", "127.0.0.3"

// sshd is Debian's OpenSSH server.
const sshd = "/usr/sbin/sshd"

// StartTimeout bounds how long Start waits for the server to answer; wide,
// for a busy machine: it costs nothing when things go well.
const StartTimeout = 90 * time.Second

// Require gates a live ssh test. Without PEERCTL_LIVE=1 it skips. With it,
// it skips with the reason when this process cannot make a second machine:
// not root (it creates a Unix user and a pid namespace), or sshd, unshare,
// ssh, ssh-keygen, useradd or tmux missing (make deps installs them). It
// fails the test when the tests claim to run offline and do not
// (livecc.RequireOffline).
func Require(t testing.TB) {
	t.Helper()
	if !livecc.Enabled() {
		t.Skip("live ssh test: set PEERCTL_LIVE=1 to run it (needs root, sshd, unshare and tmux)")
	}
	if os.Geteuid() != 0 {
		t.Skip("live ssh test: needs root (it creates a Unix user and runs sshd in a pid namespace of its own)")
	}
	if _, err := os.Stat(sshd); err != nil {
		t.Skipf("live ssh test: %s is missing (Debian's openssh-server; make deps installs it): %v", sshd, err)
	}
	for _, p := range []string{"unshare", "ssh", "ssh-keygen", "useradd", "userdel", "tmux"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("live ssh test: %s is missing (make deps installs it): %v", p, err)
		}
	}
	livecc.RequireOffline(t)
}

// Machine is one running second machine. Its fields are set by Start.
type Machine struct {
	// Alias is the ssh alias of the server with its host key known.
	Alias string
	// UnknownKey is an alias of the same server whose known_hosts is empty;
	// WrongKey one whose known_hosts holds another key for it.
	UnknownKey, WrongKey string
	// User is the Unix user the server lets in; Home its home folder.
	User, Home string
	UID, GID   int
	// Port is the server's port on 127.0.0.1.
	Port int
	// Dir holds the keys, sshd_config, ssh_config and logs (root's).
	Dir string
	// Shared is a folder the user can read (0755), for programs the far
	// side runs (see Readable).
	Shared string
	// SSHConfig is an ssh_config with this machine's aliases alone;
	// Config joins several machines'.
	SSHConfig string

	block string // this machine's Host blocks
	pidNS string // its pid namespace (/proc/PID/ns/pid's link), once serving
	cmd   *exec.Cmd
	t     testing.TB
}

// Start makes a user, keys and an sshd in its own pid namespace, waits
// until the server answers ssh, and returns the machine; alias names its
// hosts (alias, alias-unknown, alias-wrongkey). It fails the test when any
// step does. Everything ends when the test does (Stop).
func Start(t testing.TB, alias string) *Machine {
	t.Helper()
	dir := livecc.TempRoot(t, "lssh")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m := &Machine{Alias: alias, UnknownKey: alias + "-unknown", WrongKey: alias + "-wrongkey", Dir: dir,
		Shared: filepath.Join(dir, "shared"), SSHConfig: filepath.Join(dir, "ssh_config"), t: t}
	if err := os.Mkdir(m.Shared, 0o755); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m.makeUser()
	for _, k := range []string{"host_key", "other_host_key", "client_key"} {
		run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "peerctl-livessh", "-f", filepath.Join(dir, k))
	}
	sshDir := filepath.Join(m.Home, ".ssh")
	pub, err := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	if err != nil {
		t.Fatalf("livessh: %v", err)
	}
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	if err := os.WriteFile(filepath.Join(sshDir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m.chown(sshDir)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation folder
		t.Fatalf("livessh: %v", err)
	}
	t.Cleanup(m.Stop)
	var lastErr error
	for range 3 { // a port taken between the probe and sshd's bind: try another
		if lastErr = m.serve(); lastErr == nil {
			return m
		}
	}
	t.Fatalf("livessh: %v", lastErr)
	return nil
}

// StartTwin starts another machine for the same user as of (its name,
// uid and home, so an ssh alias of either reads User the same): its own
// sshd in a pid namespace of its own, with host keys of its own, letting
// in of's client key. Two aliases with one HostName, port and user then
// reach two machines (through two ProxyCommand relays), as the same
// internal address behind two bastions does.
func StartTwin(t testing.TB, alias string, of *Machine) *Machine {
	t.Helper()
	dir := livecc.TempRoot(t, "lssh")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m := &Machine{Alias: alias, UnknownKey: alias + "-unknown", WrongKey: alias + "-wrongkey", Dir: dir,
		Shared: filepath.Join(dir, "shared"), SSHConfig: filepath.Join(dir, "ssh_config"), t: t,
		User: of.User, Home: of.Home, UID: of.UID, GID: of.GID}
	if err := os.Mkdir(m.Shared, 0o755); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	for _, k := range []string{"host_key", "other_host_key"} {
		run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "peerctl-livessh", "-f", filepath.Join(dir, k))
	}
	for _, k := range []string{"client_key", "client_key.pub"} {
		raw, err := os.ReadFile(filepath.Join(of.Dir, k))
		if err != nil {
			t.Fatalf("livessh: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, k), raw, 0o600); err != nil {
			t.Fatalf("livessh: %v", err)
		}
	}
	t.Cleanup(m.Stop)
	var lastErr error
	for range 3 {
		if lastErr = m.serve(); lastErr == nil {
			return m
		}
	}
	t.Fatalf("livessh: %v", lastErr)
	return nil
}

// Accepted counts the connections the server let in so far (sshd's
// "Accepted publickey" log lines): a call that shares a connection adds
// none.
func (m *Machine) Accepted() int {
	raw, _ := os.ReadFile(filepath.Join(m.Dir, "sshd.log"))
	return strings.Count(string(raw), "Accepted publickey")
}

// HostKey is the server's public host key line ("ssh-ed25519 AAAA…").
func (m *Machine) HostKey() string {
	raw, err := os.ReadFile(filepath.Join(m.Dir, "host_key.pub"))
	if err != nil {
		m.t.Fatalf("livessh: %v", err)
	}
	f := strings.Fields(string(raw))
	return f[0] + " " + f[1]
}

// ClientKey is the path of the key the server lets in.
func (m *Machine) ClientKey() string { return filepath.Join(m.Dir, "client_key") }

// makeUser creates a fresh Unix user with a home folder and no password
// (sshd lets a key in; '*' is not a locked account), removed on cleanup.
func (m *Machine) makeUser() {
	t := m.t
	var b [4]byte
	_, _ = rand.Read(b[:])
	m.User = "pcs" + hex.EncodeToString(b[:])
	run(t, "useradd", "--create-home", "--shell", "/bin/sh", "--password", "*", m.User)
	t.Cleanup(func() {
		// The namespace is dead by now (Stop ran first: cleanups run last
		// in, first out); -f removes the user even if a process lingers.
		if out, err := exec.Command("userdel", "--force", "--remove", m.User).CombinedOutput(); err != nil {
			t.Errorf("livessh: userdel %s: %v %s", m.User, err, out)
		}
	})
	u, err := user.Lookup(m.User)
	if err != nil {
		t.Fatalf("livessh: %v", err)
	}
	m.UID, _ = strconv.Atoi(u.Uid)
	m.GID, _ = strconv.Atoi(u.Gid)
	m.Home = u.HomeDir
}

// serve writes the configs for a free port and runs sshd in its namespace.
func (m *Machine) serve() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	m.Port = port
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
HostKey %s
PidFile none
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers %s
MaxSessions 100
MaxStartups 100
LogLevel VERBOSE
`, port, filepath.Join(m.Dir, "host_key"), m.User)
	if err := os.WriteFile(filepath.Join(m.Dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		return err
	}
	if err := m.writeKnownHosts(); err != nil {
		return err
	}
	m.block = ""
	for _, h := range [][3]string{{m.Alias, "known_hosts", knownAddr}, {m.UnknownKey, "known_hosts_empty", unknownAddr}, {m.WrongKey, "known_hosts_wrong", wrongAddr}} {
		m.block += m.hostBlock(h[0], h[1], h[2])
	}
	if err := os.WriteFile(m.SSHConfig, []byte(m.block), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(m.Dir, "sshd.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	// --kill-child: SIGKILL to the unshare ends sshd, the namespace's pid 1,
	// and with it every process of the namespace.
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sshd, "-D", "-e", "-f", filepath.Join(m.Dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	m.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(StartTimeout)
	for {
		if banner(knownAddr, port) && banner(unknownAddr, port) && banner(wrongAddr, port) {
			break
		}
		select {
		case <-exited:
			m.cmd = nil
			return fmt.Errorf("sshd exited: %s", m.Log())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd on port %d did not answer in %v: %s", port, StartTimeout, m.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := m.SSH(context.Background(), nil, "true"); err != nil {
		return fmt.Errorf("ssh %s true: %v %s\nsshd log: %s", m.Alias, err, out, m.Log())
	}
	m.pidNS, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", m.listenerPID()))
	return nil
}

func (m *Machine) writeKnownHosts() error {
	for name, key := range map[string][2]string{"known_hosts": {"host_key.pub", knownAddr}, "known_hosts_wrong": {"other_host_key.pub", wrongAddr}, "known_hosts_empty": {}} {
		var line string
		if key[0] != "" {
			pub, err := os.ReadFile(filepath.Join(m.Dir, key[0]))
			if err != nil {
				return err
			}
			f := strings.Fields(string(pub))
			line = fmt.Sprintf("[%s]:%d %s %s\n", key[1], m.Port, f[0], f[1])
		}
		if err := os.WriteFile(filepath.Join(m.Dir, name), []byte(line), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// hostBlock is the ssh_config Host block of alias: this machine's server
// at addr, checked against the known_hosts file named known (in Dir).
func (m *Machine) hostBlock(alias, known, addr string) string {
	return fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n"+
		"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  LogLevel ERROR\n",
		alias, addr, m.Port, m.User, filepath.Join(m.Dir, "client_key"), filepath.Join(m.Dir, known))
}

// Aliases writes an ssh_config in which each of aliases reaches this
// machine as Alias does (same address, port, user, key and known host
// key) and returns the ssh program line for PEERCTL_SSH ("ssh -F
// <file>"). peerctl names a shared connection by `ssh -G`'s whole output,
// which starts with the alias: each alias gets a master connection of
// its own, as so many machines would, all served by this one sshd.
func (m *Machine) Aliases(aliases ...string) string {
	m.t.Helper()
	var b strings.Builder
	for _, a := range aliases {
		b.WriteString(m.hostBlock(a, "known_hosts", knownAddr))
	}
	path := filepath.Join(m.t.TempDir(), "ssh_config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		m.t.Fatalf("livessh: %v", err)
	}
	return "ssh -F " + path
}

// banner reports whether an SSH server answers on addr:port.
func banner(addr string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "SSH-2.0-")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Log returns the end of sshd's log, for failure messages.
func (m *Machine) Log() string {
	raw, _ := os.ReadFile(filepath.Join(m.Dir, "sshd.log"))
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return string(raw)
}

// SSHCommand is the ssh program line for PEERCTL_SSH that reaches the
// aliases of machines ("ssh -F <file>", a config joining theirs).
func SSHCommand(t testing.TB, machines ...*Machine) string {
	t.Helper()
	if len(machines) == 1 {
		return "ssh -F " + machines[0].SSHConfig
	}
	var b strings.Builder
	for _, m := range machines {
		b.WriteString(m.block)
	}
	path := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("livessh: %v", err)
	}
	return "ssh -F " + path
}

// SSH runs words on the machine as its user, through ssh to Alias (in
// batch mode, no connection sharing), each word quoted for the far
// side's shell (sshhost.CommandLine), with stdin (nil: none), and returns stdout and stderr.
func (m *Machine) SSH(ctx context.Context, stdin []byte, words ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ssh", "-F", m.SSHConfig, "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o", "ControlPath=none",
		m.Alias, "--", sshhost.CommandLine(words))
	cmd.Stdin = bytes.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.Bytes(), err
}

// Readable returns a path of the program bin that the machine's user can
// run: a hard link in Shared (the same file, no copy), or a copy when bin
// is on another file system. A program under root's home (the test
// cache) is out of the user's reach.
func (m *Machine) Readable(bin string) string {
	m.t.Helper()
	dst := filepath.Join(m.Shared, filepath.Base(bin))
	if err := os.Link(bin, dst); err == nil {
		return dst
	} else if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, os.ErrExist) {
		m.t.Fatalf("livessh: link %s: %v", bin, err)
	}
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		m.t.Fatalf("livessh: %v", err)
	}
	if err := os.WriteFile(dst, raw, 0o755); err != nil {
		m.t.Fatalf("livessh: %v", err)
	}
	return dst
}

// chown gives path (and everything below it) to the machine's user.
func (m *Machine) chown(path string) {
	m.t.Helper()
	err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, m.UID, m.GID)
	})
	if err != nil {
		m.t.Fatalf("livessh: chown %s: %v", path, err)
	}
}

// Processes returns the pids (as this machine sees them) of the processes
// running as the machine's user in its pid namespace (a twin's user is
// the same, its namespace another).
func (m *Machine) Processes() []int {
	des, _ := os.ReadDir("/proc")
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+de.Name(), &st) != nil || int(st.Uid) != m.UID {
			continue
		}
		if ns, _ := os.Readlink("/proc/" + de.Name() + "/ns/pid"); m.pidNS == "" || ns == m.pidNS {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ProcessesRunning returns the pids of Processes whose executable is exe.
func (m *Machine) ProcessesRunning(exe string) []int {
	var out []int
	for _, pid := range m.Processes() {
		if p, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); p == exe {
			out = append(out, pid)
		}
	}
	return out
}

// KillConnections kills the sshd processes that serve connections (every
// sshd of the namespace but its pid 1, the listener): each connection to
// the machine drops at once, as when a network path dies, while the
// server keeps accepting new ones.
func (m *Machine) KillConnections() { m.SignalConnections(syscall.SIGKILL) }

// SignalConnections sends sig to the sshd processes that serve
// connections: SIGSTOP plays a network that hangs (nothing answers, no
// connection closes), SIGCONT its return.
func (m *Machine) SignalConnections(sig syscall.Signal) {
	m.t.Helper()
	if m.cmd == nil {
		return
	}
	listener := m.listenerPID()
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == listener {
			continue
		}
		exe, _ := os.Readlink("/proc/" + de.Name() + "/exe")
		if exe == sshd && m.inNamespace(pid) {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// Down plays a machine that stops answering: the listening sshd is
// stopped (SIGSTOP: a new connection gets no banner, and ssh gives up
// after its ConnectTimeout) and every open connection is killed, shared
// ones too. Up brings it back; the sessions on it run on throughout.
func (m *Machine) Down() {
	m.t.Helper()
	if m.cmd == nil {
		return
	}
	_ = syscall.Kill(m.listenerPID(), syscall.SIGSTOP)
	m.KillConnections()
}

// Up lets the listening sshd run again (SIGCONT) after Down.
func (m *Machine) Up() {
	if m.cmd == nil {
		return
	}
	_ = syscall.Kill(m.listenerPID(), syscall.SIGCONT)
}

// listenerPID is sshd's pid here: the unshare's one child.
func (m *Machine) listenerPID() int {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", m.cmd.Process.Pid, m.cmd.Process.Pid))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid
}

// inNamespace reports whether pid lives in the machine's pid namespace.
func (m *Machine) inNamespace(pid int) bool {
	ours, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", m.listenerPID()))
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	return err1 == nil && err2 == nil && ours == theirs
}

// Stop ends the machine: SIGKILL to the unshare, whose --kill-child ends
// sshd and so the whole namespace; it waits (up to 10 s) until no process
// of the user is left. Later calls do nothing.
func (m *Machine) Stop() {
	if m.cmd == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	m.cmd = nil
	deadline := time.Now().Add(10 * time.Second)
	for len(m.Processes()) > 0 {
		if time.Now().After(deadline) {
			m.t.Errorf("livessh: processes %v of %s still run 10 s after the namespace was killed", m.Processes(), m.User)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("livessh: %s %s: %v %s", name, strings.Join(args, " "), err, out)
	}
}
