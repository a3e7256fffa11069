package opencode

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

// fakeProc is a /proc holding opencode processes made up by a test, whose
// HOME is home: their database (db) is in a folder that exists, as
// opencode makes it.
type fakeProc struct {
	root, home string
	tcp, tcp6  []string
	ino        int
}

func newFakeProc(t testing.TB) *fakeProc {
	p := &fakeProc{root: t.TempDir(), home: t.TempDir(), ino: 1000}
	require.NoError(t, os.MkdirAll(filepath.Dir(p.db()), 0o700))
	return p
}

// db is the fake processes' database.
func (p *fakeProc) db() string {
	return filepath.Join(p.home, ".local", "share", "opencode", "opencode.db")
}

// add makes process pid running args in cwd, listening on ports.
func (p *fakeProc) add(t testing.TB, pid int, cwd string, args []string, ports ...int) {
	t.Helper()
	dir := filepath.Join(p.root, strconv.Itoa(pid))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
	require.NoError(t, os.Symlink("/opt/node_modules/opencode-linux-x64/bin/opencode", filepath.Join(dir, "exe")))
	require.NoError(t, os.Symlink(cwd, filepath.Join(dir, "cwd")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "environ"), []byte("PATH=/bin\x00HOME="+p.home+"\x00"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o644))
	f := []string{"S", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "777", "999", "1000"}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(strconv.Itoa(pid)+" (opencode) "+strings.Join(f, " ")+"\n"), 0o644))
	addrs := make([]netip.AddrPort, len(ports))
	for i, port := range ports {
		addrs[i] = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	}
	p.listen(t, dir, addrs...)
}

// listen makes the process at dir listen on addrs (in /proc/net/tcp or
// tcp6, by its family).
func (p *fakeProc) listen(t testing.TB, dir string, addrs ...netip.AddrPort) {
	for i, a := range addrs {
		p.ino++
		require.NoError(t, os.Symlink(fmt.Sprintf("socket:[%d]", p.ino), filepath.Join(dir, "fd", strconv.Itoa(10+i))))
		line := fmt.Sprintf("   %d: %s 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0 100 0 0 10 0", len(p.tcp)+len(p.tcp6), sockowner.Encode(a), p.ino)
		if a.Addr().Is4() {
			p.tcp = append(p.tcp, line)
		} else {
			p.tcp6 = append(p.tcp6, line)
		}
	}
	require.NoError(t, os.MkdirAll(filepath.Join(p.root, "net"), 0o755))
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	require.NoError(t, os.WriteFile(filepath.Join(p.root, "net", "tcp"), []byte(head+strings.Join(p.tcp, "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(p.root, "net", "tcp6"), []byte(head+strings.Join(p.tcp6, "\n")+"\n"), 0o644))
}

func portOf(t testing.TB, addr string) int {
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, _ := strconv.Atoi(port)
	return n
}

func TestRegistryReadsLiveServers(t *testing.T) {
	work := t.TempDir()
	good := newFake(t)
	good.sessions = `[{"id":"` + sid + `","directory":"` + work + `","title":"fix\nthe build","time":{"created":1796220991313,"updated":1796220991400}},` +
		`{"id":"ses_dc8e2c8afffe1ZXzAqgdFW043F","directory":"/elsewhere","title":"another folder's"},` +
		`{"id":"ses_dc8e2c8afffe1ZXzAqgdFW043G","directory":"` + work + `","time":{"archived":5}}]`
	locked := newFake(t)
	locked.password = "s3cret"
	notOpencode := newPlain(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>")) })
	hangs := newPlain(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	p := newFakeProc(t)
	p.add(t, 101, work, []string{"opencode", "serve", "--port", "0"}, portOf(t, good.addr()))
	p.add(t, 102, work, []string{"opencode"})
	p.add(t, 103, work, []string{"opencode", "--port", "0"}, portOf(t, locked.addr()))
	p.add(t, 104, work, []string{"opencode", "serve"}, portOf(t, notOpencode))
	p.add(t, 105, work, []string{"opencode", "serve"}, portOf(t, hangs))
	p.add(t, 106, work, []string{"opencode", "attach", "http://" + good.addr()})
	p.add(t, 107, work, []string{"opencode", "serve"}) // starting: no port yet

	r := NewRegistry(p.db(), Auth{}, "linux:x:pid:[1]")
	r.procRoot, r.uid, r.ask, r.serverPIDOf = p.root, os.Getuid(), 500*time.Millisecond, self
	start := time.Now()
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second, "a hanging server costs one bound, in parallel")

	by := map[int][]domain.Record{}
	for _, rec := range snap.Records {
		assert.Equal(t, Kind, rec.Harness)
		assert.Equal(t, "linux:x:pid:[1]", rec.PIDDomain)
		by[rec.PID] = append(by[rec.PID], rec)
	}
	require.Len(t, by[101], 1, "only the live server's folder's unarchived session")
	s := by[101][0]
	assert.Equal(t, sid, s.SessionID)
	assert.Equal(t, "fix the build", s.Name)
	assert.Equal(t, good.addr(), s.SocketPath)
	assert.Equal(t, "1.18.33", s.Version)
	assert.Equal(t, "777", s.ProcStart)
	assert.Equal(t, domain.StatusIdle, s.Status)

	require.Len(t, by[102], 1)
	assert.Equal(t, KindPlainTUI, by[102][0].Kind)
	require.Len(t, by[103], 1)
	assert.Equal(t, KindLocked, by[103][0].Kind)
	require.Len(t, by[104], 1)
	assert.Contains(t, by[104][0].Problem, "not an opencode server")
	require.Len(t, by[105], 1)
	assert.NotEmpty(t, by[105][0].Problem)
	assert.Empty(t, by[106], "an attach TUI is its server's client, not a server")
	require.Len(t, by[107], 1)

	live := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	for pid, want := range map[int]string{102: "opencode --port 0", 103: "OPENCODE_SERVER_PASSWORD", 107: "listens on no port"} {
		e := domain.Classify(by[pid][0], live)
		assert.True(t, e.Live(), "pid %d", pid)
		assert.False(t, e.Addressable, "pid %d", pid)
		assert.Contains(t, e.Unaddressable, want, "pid %d", pid)
	}
	assert.True(t, domain.Classify(s, live).Addressable)
	for _, pid := range []int{104, 105} {
		assert.False(t, domain.Classify(by[pid][0], live).Live(), "pid %d", pid)
	}
	// Nothing was written: every request was a GET.
	assert.Empty(t, good.postBodies())
}

func TestRegistryWithPassword(t *testing.T) {
	work := t.TempDir()
	locked := newFake(t)
	locked.password = "s3cret"
	locked.sessions = `[{"id":"` + sid + `","directory":"` + work + `"}]`
	p := newFakeProc(t)
	p.add(t, 103, work, []string{"opencode", "serve"}, portOf(t, locked.addr()))
	r := NewRegistry(p.db(), NewAuth("", "s3cret"), "")
	r.procRoot, r.uid, r.serverPIDOf = p.root, os.Getuid(), self
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Records, 1)
	assert.Equal(t, sid, snap.Records[0].SessionID)
}

func TestRegistryOtherUsersProcessesAreNotRead(t *testing.T) {
	p := newFakeProc(t)
	p.add(t, 101, t.TempDir(), []string{"opencode"})
	r := NewRegistry(p.db(), Auth{}, "")
	r.procRoot, r.uid = p.root, os.Getuid()+1
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	assert.Empty(t, snap.Records)
}

func TestRegistryServesOneDatabase(t *testing.T) {
	p := newFakeProc(t)
	p.add(t, 101, t.TempDir(), []string{"opencode"})
	r := NewRegistry(filepath.Join(t.TempDir(), "opencode.db"), Auth{}, "")
	r.procRoot, r.uid, r.serverPIDOf = p.root, os.Getuid(), self
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	assert.Empty(t, snap.Records, "another opencode user's process (another database)")

	r = NewRegistry("", Auth{}, "")
	_, err = r.Read(context.Background())
	assert.ErrorContains(t, err, "locate opencode's database")
}

// Where opencode has no state (its database's folder does not exist: it
// never ran for this user) the process table is not walked at all: a
// harness that is not there costs list one stat.
func TestRegistryWithoutStateLooksNoFurther(t *testing.T) {
	p := newFakeProc(t)
	p.add(t, 101, t.TempDir(), []string{"opencode"}) // would be a record, its database there
	require.NoError(t, os.RemoveAll(filepath.Join(p.home, ".local")))
	r := NewRegistry(p.db(), Auth{}, "")
	r.procRoot, r.uid = p.root, os.Getuid()
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	assert.Empty(t, snap.Records)
	assert.Empty(t, snap.Warnings)
}

func TestDatabase(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/h"}, "/h/.local/share/opencode/opencode.db"},
		{map[string]string{"HOME": "/h", "XDG_DATA_HOME": "/x"}, "/x/opencode/opencode.db"},
		{map[string]string{"HOME": "/h", "XDG_DATA_HOME": "rel"}, "/cwd/rel/opencode/opencode.db"},
		{map[string]string{"HOME": "/h", DBEnv: "/db/o.db"}, "/db/o.db"},
		{map[string]string{"HOME": "/h", DBEnv: "other.db"}, "/h/.local/share/opencode/other.db"},
		{map[string]string{}, ""},
	} {
		assert.Equal(t, c.want, Database(func(k string) string { return c.env[k] }, "/cwd"), "%v", c.env)
	}
}

// serveAt serves f's API on addr (a fake opencode server bound there).
func serveAt(t *testing.T, f *fakeServer, addr string) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(f)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return netip.MustParseAddrPort(ln.Addr().String())
}

// A server bound to 127.0.0.2 or ::1 is read at that address, not at
// 127.0.0.1, where another user's process holds the same port and gets
// nothing; a process whose listener's address is held by another
// process's socket is unreadable, saying whose it is.
func TestRegistryDialsTheBoundAddressOfItsOwnListener(t *testing.T) {
	im := transporttest.ListenAsOther(t, "127.0.0.1:0")
	port := netip.MustParseAddrPort(im.Addr).Port()
	work := t.TempDir()
	p := newFakeProc(t)
	for i, host := range []string{"127.0.0.2", "::1"} {
		f := newFake(t)
		f.sessions = fmt.Sprintf(`[{"id":"ses_dc8e2c8afffe1ZXzAqgdFW043%d","directory":"%s"}]`, i, work)
		bound := serveAt(t, f, net.JoinHostPort(host, strconv.Itoa(int(port))))
		pid := 101 + i
		p.add(t, pid, work, []string{"opencode", "serve"})
		p.listen(t, filepath.Join(p.root, strconv.Itoa(pid)), bound)
	}
	p.add(t, 103, work, []string{"opencode", "serve"}, int(port)) // says it listens where the impostor does
	r := NewRegistry(p.db(), NewAuth("", "s3cret"), "")
	r.procRoot, r.uid, r.serverPIDOf = p.root, os.Getuid(), self
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	by := map[int]domain.Record{}
	for _, rec := range snap.Records {
		by[rec.PID] = rec
	}
	assert.Equal(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(int(port))), by[101].SocketPath, "%+v", by[101])
	assert.Equal(t, net.JoinHostPort("::1", strconv.Itoa(int(port))), by[102].SocketPath, "%+v", by[102])
	assert.NotEmpty(t, by[101].SessionID)
	assert.NotEmpty(t, by[102].SessionID)
	assert.Contains(t, by[103].Problem, "is not pid")
	assert.Contains(t, by[103].Problem, im.Addr)
	assert.Empty(t, im.Received(), "the impostor at %s received bytes", im.Addr)
}

// A process may hold a listener that takes a connection and never
// answers (seen: a real opencode serve after its first turn): it costs
// the others nothing, so a server that asks for a password is still told
// from one that cannot be read, and a healthy one still found.
func TestRegistryAListenerThatNeverAnswersHidesNothing(t *testing.T) {
	work := t.TempDir()
	hangs := newPlain(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	locked := newFake(t)
	locked.password = "s3cret"
	good := newFake(t)
	good.sessions = `[{"id":"` + sid + `","directory":"` + work + `"}]`
	p := newFakeProc(t)
	p.add(t, 101, work, []string{"opencode", "serve"}, portOf(t, hangs), portOf(t, locked.addr()))
	p.add(t, 102, work, []string{"opencode", "serve"}, portOf(t, hangs), portOf(t, good.addr()))
	r := NewRegistry(p.db(), Auth{}, "")
	r.procRoot, r.uid, r.ask, r.serverPIDOf = p.root, os.Getuid(), time.Second, self
	snap, err := r.Read(context.Background())
	require.NoError(t, err)
	by := map[int]domain.Record{}
	for _, rec := range snap.Records {
		by[rec.PID] = rec
	}
	assert.Equal(t, KindLocked, by[101].Kind, "%+v", by[101])
	assert.Equal(t, locked.addr(), by[101].SocketPath)
	assert.Equal(t, sid, by[102].SessionID, "%+v", by[102])
}

// doctor's opencode line says what a password-protected server said
// (none given, or refused), naming its address, not only in a warning.
func TestDoctorSaysWhatAPasswordProtectedServerSaid(t *testing.T) {
	h, err := New(settings(map[string]string{"HOME": t.TempDir()}))
	require.NoError(t, err)
	h.registry.goos = "linux"
	live := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	entries := []domain.Entry{
		domain.Classify(domain.Record{Harness: Kind, PID: 101, ProcStart: "1", Kind: KindLocked, SocketPath: "[::1]:4096"}, live),
		domain.Classify(domain.Record{Harness: Kind, PID: 102, ProcStart: "1", Kind: KindRefused, SocketPath: "127.0.0.2:4097"}, live),
	}
	rows := h.Doctor(context.Background(), entries)
	require.Len(t, rows, 1)
	require.Len(t, rows[0].Lines, 1)
	line := rows[0].Lines[0].Text
	assert.Equal(t, domain.HealthWarn, rows[0].Health)
	assert.Contains(t, line, "the opencode server at [::1]:4096 asks for a password and peerctl has none")
	assert.Contains(t, line, "the opencode server at 127.0.0.2:4097 refused peerctl's password")
}
