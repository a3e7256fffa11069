package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

func TestFilePID(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"4652.json", 4652, true},
		{"1.json", 1, true},
		{"2147483647.json", 1<<31 - 1, true},
		{"2147483648.json", 0, false},
		{"99999999999.json", 0, false},
		{"0.json", 0, false},
		{"04652.json", 0, false},
		{"+4652.json", 0, false},
		{"-4652.json", 0, false},
		{"4652b.json", 0, false},
		{"4652.json.json", 0, false},
		{".json", 0, false},
		{"4652", 0, false},
		{"४६५२.json", 0, false}, // non-ASCII digits
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid, ok := filePID(tc.name)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.pid, pid)
		})
	}
}

// proberLiveness is a Liveness and PIDProber over a fixed set of gone pids;
// it records which pids Check saw and the batches Gone was asked.
type proberLiveness struct {
	gone  map[int]bool
	mu    sync.Mutex
	seen  []int
	asked [][]int
}

func (p *proberLiveness) Gone(pids []int) []bool {
	p.mu.Lock()
	p.asked = append(p.asked, slices.Clone(pids))
	p.mu.Unlock()
	gone := make([]bool, len(pids))
	for i, pid := range pids {
		gone[i] = p.gone[pid]
	}
	return gone
}

func (p *proberLiveness) Check(rec domain.Record) domain.Liveness {
	p.mu.Lock()
	p.seen = append(p.seen, rec.PID)
	p.mu.Unlock()
	if p.gone[rec.PID] {
		return domain.Liveness{Alive: domain.No}
	}
	return domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
}

// plainLiveness hides the PIDProber method, forcing full reads.
type plainLiveness struct{ p *proberLiveness }

func (l plainLiveness) Check(rec domain.Record) domain.Liveness { return l.p.Check(rec) }

func writeLiveOnlyRecord(t *testing.T, dir, file string, pid int, id, name string) {
	t.Helper()
	body := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/home/dev/src/shop","procStart":"100","kind":"interactive","messagingSocketPath":"/tmp/cc-socks/%d.sock","name":%q}`, pid, id, pid, name)
	require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(body), 0o600))
}

// liveOnlyWorld is a registry folder with live, gone and odd records:
//
//	100.json  live            "alpha"
//	200.json  pid gone        "beta"   (stale)
//	300.json  pid gone, holds pid 100 (misnamed; its file pid is gone)
//	400.json  pid gone, not JSON
//	0500.json not canonical, holds pid 500 (live, but misnamed)
//	600.json  live, holds pid 700 (misnamed)
func liveOnlyWorld(t *testing.T) (dir string, live *proberLiveness) {
	dir = t.TempDir()
	writeLiveOnlyRecord(t, dir, "100.json", 100, "aaaaaaaa-0000-4000-8000-000000000100", "alpha")
	writeLiveOnlyRecord(t, dir, "200.json", 200, "bbbbbbbb-0000-4000-8000-000000000200", "beta")
	writeLiveOnlyRecord(t, dir, "300.json", 100, "cccccccc-0000-4000-8000-000000000300", "gamma")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "400.json"), []byte("{not json"), 0o600))
	writeLiveOnlyRecord(t, dir, "0500.json", 500, "dddddddd-0000-4000-8000-000000000500", "delta")
	writeLiveOnlyRecord(t, dir, "600.json", 700, "eeeeeeee-0000-4000-8000-000000000600", "epsilon")
	return dir, newProber()
}

// newProber is the liveness of liveOnlyWorld: pids 200, 300 and 400 are gone.
func newProber() *proberLiveness {
	return &proberLiveness{gone: map[int]bool{200: true, 300: true, 400: true}}
}

func TestListLiveOnlySkipsGonePIDsAndAgreesWithAFullRead(t *testing.T) {
	dir, live := liveOnlyWorld(t)
	fast := New(fsregistry.New(dir), live, nil, "")
	full := New(fsregistry.New(dir), plainLiveness{live}, nil, "")

	got, err := fast.List(context.Background(), false)
	require.NoError(t, err)
	want, err := full.List(context.Background(), false)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.Len(t, got.Entries, 1)
	assert.Equal(t, "alpha", got.Entries[0].Record.Name)

	// --all still reads and classifies every record.
	all, err := fast.List(context.Background(), true)
	require.NoError(t, err)
	assert.Len(t, all.Entries, 6)
}

func TestReadLiveNeverChecksRecordsOfGonePIDs(t *testing.T) {
	dir, live := liveOnlyWorld(t)
	svc := New(fsregistry.New(dir), live, nil, "")
	l, partial, err := svc.readLive(context.Background())
	require.NoError(t, err)
	assert.True(t, partial)
	files := make([]string, 0, len(l.Entries))
	for _, e := range l.Entries {
		files = append(files, e.Record.File)
	}
	assert.ElementsMatch(t, []string{"100.json", "0500.json", "600.json"}, files)
	assert.NotContains(t, live.seen, 200, "the record in a gone pid's file was checked")
	require.Len(t, live.asked, 1, "one question for the folder")
	assert.ElementsMatch(t, []int{100, 200, 300, 400, 600}, live.asked[0], "the pids of its <pid>.json names")

	// A full read does check it: the assertion above can fail.
	full := newProber()
	_, err = New(fsregistry.New(dir), plainLiveness{full}, nil, "").Read(context.Background())
	require.NoError(t, err)
	assert.Contains(t, full.seen, 200)
}

func TestReadLiveFallsBackToAFullReadWithoutTheOptionalPorts(t *testing.T) {
	dir, live := liveOnlyWorld(t)
	svc := New(fsregistry.New(dir), plainLiveness{live}, nil, "")
	l, partial, err := svc.readLive(context.Background())
	require.NoError(t, err)
	assert.False(t, partial)
	assert.Len(t, l.Entries, 6)
}

// noDeliveryTransport fails the test if it is ever asked to deliver.
type noDeliveryTransport struct{ t *testing.T }

func (s noDeliveryTransport) Name() string { return "stub" }
func (s noDeliveryTransport) Deliver(context.Context, domain.Session, domain.Message) (domain.Receipt, error) {
	s.t.Error("a refused send reached the transport")
	return domain.Receipt{}, nil
}
func (s noDeliveryTransport) Plan(domain.Session, domain.Message) (domain.Plan, error) {
	return domain.Plan{Transport: "stub"}, nil
}

var _ ports.Transport = noDeliveryTransport{}

// A refusal may name a record that the live-only read skipped: Send must
// refuse exactly as it would after a full read.
func TestSendRefusesAsAFullReadWould(t *testing.T) {
	for _, address := range []string{"beta", "bbbbbbbb-0000-4000-8000-000000000200", "bbbbbbbb", "nobody",
		"cc-peer:v1:200:beta:/tmp/cc-socks/200.sock", "cc-peer:v1:bad"} {
		t.Run(address, func(t *testing.T) {
			dir, live := liveOnlyWorld(t)
			fast := New(fsregistry.New(dir), live, noDeliveryTransport{t}, "")
			full := New(fsregistry.New(dir), plainLiveness{live}, noDeliveryTransport{t}, "")
			_, gotErr := fast.Send(context.Background(), SendRequest{Address: address, Text: "hi"})
			_, wantErr := full.Send(context.Background(), SendRequest{Address: address, Text: "hi"})
			require.Error(t, wantErr)
			assert.Equal(t, wantErr.Error(), gotErr.Error())
		})
	}
}

func TestSendResolvesALiveTargetOnTheLiveOnlyRead(t *testing.T) {
	dir, live := liveOnlyWorld(t)
	svc := New(fsregistry.New(dir), live, noDeliveryTransport{t}, "")
	res, err := svc.Send(context.Background(), SendRequest{Address: "alpha", Text: "hi", DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 100, res.Target.PID())
	require.NotNil(t, res.Plan)
}

func TestEnrichOnTheLiveOnlyReadAgreesWithAFullRead(t *testing.T) {
	dir, live := liveOnlyWorld(t)
	ids := []string{"aaaaaaaa-0000-4000-8000-000000000100", "bbbbbbbb-0000-4000-8000-000000000200",
		"cccccccc-0000-4000-8000-000000000300", "dddddddd-0000-4000-8000-000000000500", "nobody"}
	got, err := New(fsregistry.New(dir), live, nil, "").Enrich(context.Background(), ids)
	require.NoError(t, err)
	want, err := New(fsregistry.New(dir), plainLiveness{newProber()}, nil, "").Enrich(context.Background(), ids)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"aaaaaaaa-0000-4000-8000-000000000100"}, keys(got))
	assert.NotContains(t, live.seen, 200, "the record in a gone pid's file was checked")
}

func keys(m map[string]wire.LiveInfo) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// listerLiveness is proberLiveness that also lists the running processes
// (ports.PIDLister).
type listerLiveness struct {
	*proberLiveness
	running []int
	listed  int
}

func (l *listerLiveness) Processes() int { return len(l.running) }
func (l *listerLiveness) Listed() ([]int, bool) {
	l.listed++
	return l.running, true
}

var _ ports.PIDLister = (*listerLiveness)(nil)

// largeLiveOnlyWorld is liveOnlyWorld with 1,000 stale records more (pids
// 100000 and up, gone), each beside its key file: a folder large enough
// that the registry reads it by process. It skips where the file system
// gives folders no size that grows with their names.
func largeLiveOnlyWorld(t *testing.T) (dir string, live *proberLiveness) {
	dir, live = liveOnlyWorld(t)
	for i := range 1000 {
		pid := 100000 + i
		writeLiveOnlyRecord(t, dir, fmt.Sprintf("%d.json", pid), pid, fmt.Sprintf("ffffffff-0000-4000-8000-%012d", pid), fmt.Sprintf("stale-%d", pid))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte("{}"), 0o600))
		live.gone[pid] = true
	}
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	if fi.Size() < 64*1024 {
		t.Skipf("this file system gives a folder of 2,000 names %d bytes: it is listed", fi.Size())
	}
	return dir, live
}

// Read by process (the registry's folder left unlisted), list agrees with
// a full read: the live record is listed, the stale ones are never
// checked, and --all still shows every record.
func TestListByProcessAgreesWithAFullRead(t *testing.T) {
	dir, prober := largeLiveOnlyWorld(t)
	live := &listerLiveness{proberLiveness: prober, running: []int{100, 500, 600, 700}}
	fast := New(fsregistry.New(dir), live, nil, "")
	full := New(fsregistry.New(dir), plainLiveness{&proberLiveness{gone: prober.gone}}, nil, "")

	got, err := fast.List(context.Background(), false)
	require.NoError(t, err)
	require.Equal(t, 1, live.listed, "the registry was not read by process")
	want, err := full.List(context.Background(), false)
	require.NoError(t, err)
	assert.Equal(t, want.Entries, got.Entries)
	require.Len(t, got.Entries, 1)
	assert.Equal(t, "alpha", got.Entries[0].Record.Name)
	assert.Positive(t, got.NotLive, "--all would add records")
	assert.NotContains(t, prober.seen, 100000, "a stale record was checked")
	assert.NotContains(t, prober.seen, 200, "a stale record was checked")

	all, err := fast.List(context.Background(), true)
	require.NoError(t, err)
	assert.Len(t, all.Entries, 1006, "--all lists every record")
	allFull, err := full.List(context.Background(), true)
	require.NoError(t, err)
	assert.Equal(t, allFull.Entries, all.Entries)
}

// With no session running, a read by process lists nothing and says that
// --all would add records (list: "none live", not "no record at all").
func TestListByProcessWithNothingLive(t *testing.T) {
	dir, prober := largeLiveOnlyWorld(t)
	live := &listerLiveness{proberLiveness: prober, running: []int{1, 2, 3}}
	got, err := New(fsregistry.New(dir), live, nil, "").List(context.Background(), false)
	require.NoError(t, err)
	require.Equal(t, 1, live.listed)
	assert.Empty(t, got.Entries)
	assert.Positive(t, got.NotLive)
}

// Send on a read by process resolves and refuses as after a full read.
func TestSendByProcessAsAFullReadWould(t *testing.T) {
	dir, prober := largeLiveOnlyWorld(t)
	live := &listerLiveness{proberLiveness: prober, running: []int{100, 500, 600, 700}}
	svc := New(fsregistry.New(dir), live, noDeliveryTransport{t}, "")
	res, err := svc.Send(context.Background(), SendRequest{Address: "alpha", Text: "hi", DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, 100, res.Target.PID())
	for _, address := range []string{"beta", "stale-100001", "ffffffff", "delta", "nobody"} {
		_, gotErr := svc.Send(context.Background(), SendRequest{Address: address, Text: "hi"})
		_, wantErr := New(fsregistry.New(dir), plainLiveness{&proberLiveness{gone: prober.gone}}, noDeliveryTransport{t}, "").Send(context.Background(), SendRequest{Address: address, Text: "hi"})
		require.Error(t, wantErr, address)
		assert.Equal(t, wantErr.Error(), gotErr.Error(), address)
	}
}
