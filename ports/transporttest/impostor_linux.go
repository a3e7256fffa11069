//go:build linux

package transporttest

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// impostorEnv makes a test binary that imports this package the impostor
// (serveImpostor) instead of running its tests.
const impostorEnv = "PEERCTL_TRANSPORTTEST_IMPOSTOR"

// Nobody is the uid (and gid) an impostor runs as when the test runs as
// root: another Unix user's process.
const Nobody = 65534

// syncWait bounds the impostor's wait, when asked what it received, for
// the connections it accepted to end.
const syncWait = 20 * time.Second

func init() {
	if addr := os.Getenv(impostorEnv); addr != "" {
		os.Exit(serveImpostor(addr))
	}
}

// OtherListener is a listener held by another process than the test's and
// than any target's: of another Unix user (Nobody) when the test runs as
// root, else of this user. It accepts every connection, answers nothing
// and records every byte it receives. Build it with ListenAsOther.
type OtherListener struct {
	// Addr is the address it holds ("127.0.0.1:4096").
	Addr string
	// PID and UID are its process's.
	PID, UID int

	stdin io.WriteCloser
	mu    sync.Mutex
	got   map[int]*strings.Builder
	order []int
	sync  chan struct{}
}

// copied is the copy of this test binary another user may run (a
// folder it can enter), made by the first impostor and removed by the
// cleanup of the test that made it; the lock is held from the copy to
// the start of each impostor, so none starts from a removed copy.
var copied struct {
	sync.Mutex
	bin string
}

// otherBinary is the copy (copied.bin), made when there is none;
// copied's lock is held.
func otherBinary(t testing.TB) string {
	if copied.bin != "" {
		return copied.bin
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("impostor: %v", err)
	}
	dir, err := os.MkdirTemp("", "peerctl-impostor-")
	if err != nil {
		t.Fatalf("impostor: %v", err)
	}
	t.Cleanup(func() {
		copied.Lock()
		defer copied.Unlock()
		_ = os.RemoveAll(dir)
		copied.bin = ""
	})
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatalf("impostor: %v", err)
	}
	bin := filepath.Join(dir, "impostor")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatalf("impostor: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("impostor: %v", err)
	}
	copied.bin = bin
	return bin
}

// ListenAsOther starts an OtherListener on addr ("127.0.0.1:0" for any port),
// stopped when the test ends.
func ListenAsOther(t testing.TB, addr string) *OtherListener {
	t.Helper()
	copied.Lock()
	defer copied.Unlock()
	cmd := exec.Command(otherBinary(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), impostorEnv+"="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	uid := os.Getuid()
	if uid == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: Nobody, Gid: Nobody}
		uid = Nobody
	} else {
		t.Logf("impostor: not root, so the impostor at %s is this user's (another process all the same)", addr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("impostor: %v", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("impostor: %v", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("impostor: %v", err)
	}
	im := &OtherListener{PID: cmd.Process.Pid, UID: uid, stdin: stdin, got: map[int]*strings.Builder{}, sync: make(chan struct{}, 1)}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = syscall.Kill(-im.PID, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go im.read(out, ready)
	select {
	case a, ok := <-ready:
		if !ok {
			t.Fatalf("impostor on %s did not start", addr)
		}
		im.Addr = a
	case <-time.After(time.Minute):
		t.Fatalf("impostor on %s did not start within a minute", addr)
	}
	return im
}

// read follows the impostor's report: "listening ADDR", "data N HEX",
// "synced".
func (im *OtherListener) read(out io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	started := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "listening":
			started = true
			ready <- f[1]
		case len(f) == 3 && f[0] == "data":
			n, _ := strconv.Atoi(f[1])
			b, _ := hex.DecodeString(f[2])
			im.mu.Lock()
			if im.got[n] == nil {
				im.got[n] = &strings.Builder{}
				im.order = append(im.order, n)
			}
			im.got[n].Write(b)
			im.mu.Unlock()
		case len(f) == 1 && f[0] == "synced":
			im.sync <- struct{}{}
		}
	}
	if !started {
		close(ready)
	}
}

// Received is every byte the impostor received, one string per
// connection, in the order they first sent. It first asks the impostor
// to take every connection waiting to be accepted and to read each it
// accepted to its end (at most syncWait), so that nothing sent before
// the call is missed.
func (im *OtherListener) Received() []string {
	if _, err := io.WriteString(im.stdin, "sync\n"); err == nil {
		select {
		case <-im.sync:
		case <-time.After(2 * syncWait):
		}
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	out := make([]string, 0, len(im.order))
	for _, n := range im.order {
		out = append(out, im.got[n].String())
	}
	return out
}

// serveImpostor is the impostor process: it listens on addr, reports
// "listening <addr>", accepts every connection and reports each read as
// "data <conn> <hex>"; each line "sync" on stdin is answered "synced"
// once no connection waits to be accepted and every accepted one ended
// (or syncWait passed). It ends when stdin does.
func serveImpostor(addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "impostor:", err)
		return 1
	}
	var (
		mu   sync.Mutex
		out  = bufio.NewWriter(os.Stdout)
		live sync.WaitGroup
		n    int
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	say("listening %s", ln.Addr())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			id := n
			live.Add(1)
			mu.Unlock()
			go func() {
				defer live.Done()
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					k, err := c.Read(buf)
					if k > 0 {
						say("data %d %s", id, hex.EncodeToString(buf[:k]))
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "sync" {
			continue
		}
		deadline := time.Now().Add(syncWait)
		for backlog(ln) > 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		done := make(chan struct{})
		go func() { live.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Until(deadline)):
		}
		say("synced")
	}
	return 0
}

// backlog is how many connections wait to be accepted on ln: its LISTEN
// row's rx_queue in /proc/net/tcp* (proc(5)), found by the socket's
// inode; 0 when not found.
func backlog(ln net.Listener) int {
	var ino uint64
	if sc, err := ln.(*net.TCPListener).SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) {
			var st syscall.Stat_t
			if syscall.Fstat(int(fd), &st) == nil {
				ino = st.Ino
			}
		})
	}
	want := strconv.FormatUint(ino, 10)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || f[9] != want {
				continue
			}
			_, rx, _ := strings.Cut(f[4], ":")
			q, _ := strconv.ParseUint(rx, 16, 32)
			return int(q)
		}
	}
	return 0
}
