package opencode

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// fakeProc is a /proc holding opencode processes made up by a test, whose
// HOME is home: their database (db) is in a folder that exists, as
// opencode makes it.
type fakeProc struct {
	root, home string
	tcp        []string
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
	for i, port := range ports {
		p.ino++
		require.NoError(t, os.Symlink(fmt.Sprintf("socket:[%d]", p.ino), filepath.Join(dir, "fd", strconv.Itoa(10+i))))
		p.tcp = append(p.tcp, fmt.Sprintf("   %d: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0 100 0 0 10 0", len(p.tcp), port, p.ino))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(p.root, "net"), 0o755))
	head := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	require.NoError(t, os.WriteFile(filepath.Join(p.root, "net", "tcp"), []byte(head+strings.Join(p.tcp, "\n")+"\n"), 0o644))
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
	r.procRoot, r.uid, r.ask = p.root, os.Getuid(), 500*time.Millisecond
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
	r.procRoot, r.uid = p.root, os.Getuid()
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
	r.procRoot, r.uid = p.root, os.Getuid()
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
