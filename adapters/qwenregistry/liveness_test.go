package qwenregistry_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
)

// baseFake answers for pid 4242 started at tick 42; other pids are gone.
type baseFake struct{ got []domain.Record }

func (b *baseFake) Check(r domain.Record) domain.Liveness {
	b.got = append(b.got, r)
	if r.PID != 4242 {
		return domain.Liveness{Alive: domain.No}
	}
	l := domain.Liveness{Alive: domain.Yes, ActualStart: "42"}
	switch r.ProcStart {
	case "":
		l.Unchecked = []string{"record has no procStart; start time not checked", "record has no pidDomain; pid namespace not checked"}
	case "42":
		l.StartMatches = domain.Yes
	default:
		l.StartMatches = domain.No
	}
	return l
}

func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "kernel", "random"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sys", "kernel", "random", "boot_id"), []byte("boot-1\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "self", "ns"), 0o755))
	require.NoError(t, os.Symlink("pid:[4026531836]", filepath.Join(root, "self", "ns", "pid")))
	return root
}

func TestLivenessRules(t *testing.T) {
	live := qwenregistry.NewLiveness(&baseFake{}, fakeProc(t))
	rec := func(pid int, procStart, ns string) domain.Record {
		return domain.Record{Harness: qwenregistry.Kind, File: "x.json", PID: pid, SessionID: "s", Name: "a-09",
			ProcStart: procStart, PIDDomain: ns, SocketPath: "/run/q.sock", Kind: "tui"}
	}
	cases := []struct {
		name    string
		rec     domain.Record
		verdict domain.Verdict
		reason  string
	}{
		{"live", rec(4242, "boot-1:42", "4026531836"), domain.VerdictLive, ""},
		{"other ticks: reused", rec(4242, "boot-1:43", "4026531836"), domain.VerdictReused, "record says procStart boot-1:43"},
		{"other boot: reused", rec(4242, "boot-0:42", "4026531836"), domain.VerdictReused, "this boot boot-1"},
		{"pid gone: stale", rec(5, "boot-1:42", "4026531836"), domain.VerdictStale, "not running"},
		{"other pid namespace: foreign", rec(4242, "boot-1:42", "4026531999"), domain.VerdictForeign, "pidNs 4026531999 is not ours"},
		{"no pidNs: foreign, as Qwen Code never lists it", rec(4242, "boot-1:42", ""), domain.VerdictForeign, "no pidNs"},
		{"no procStart: live, start unchecked", rec(4242, "", "4026531836"), domain.VerdictLive, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := domain.Classify(c.rec, live.Check(c.rec))
			assert.Equal(t, c.verdict, e.Verdict, e.Reason)
			assert.Contains(t, e.Reason, c.reason)
		})
	}
	e := domain.Classify(rec(4242, "", "4026531836"), live.Check(rec(4242, "", "4026531836")))
	assert.Equal(t, []string{"record has no procStart; start time not checked"}, e.Unchecked, "no Claude Code words about pidDomain")
}

func TestUnaddressableWithoutIPCPath(t *testing.T) {
	live := qwenregistry.NewLiveness(&baseFake{}, fakeProc(t))
	r := domain.Record{Harness: qwenregistry.Kind, File: "4242.json", PID: 4242, SessionID: "s", Name: "a-db",
		ProcStart: "boot-1:42", PIDDomain: "4026531836", Version: "0.23.0", Kind: "tui"}
	e := domain.Classify(r, live.Check(r))
	require.True(t, e.Live())
	assert.False(t, e.Addressable)
	assert.Contains(t, e.Unaddressable, "no ipcPath")
	assert.Contains(t, e.Unaddressable, "0.23.0 has it off by default")
	assert.True(t, e.Endpoint().IsZero())
}

// Building the checker reads nothing: every command builds every harness,
// and a machine with no Qwen Code records must not pay for its /proc
// reads. The boot id and pid namespace are read when a record is first
// checked (here: written only after NewLiveness).
func TestLivenessReadsProcOnlyWhenItChecks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proc")
	live := qwenregistry.NewLiveness(&baseFake{}, root)
	require.NoError(t, os.MkdirAll(filepath.Dir(root), 0o755))
	require.NoError(t, os.CopyFS(root, os.DirFS(fakeProc(t))))
	r := domain.Record{Harness: qwenregistry.Kind, File: "4242.json", PID: 4242, SessionID: "s", Name: "a-09",
		ProcStart: "boot-1:42", PIDDomain: "4026531836", SocketPath: "/run/q.sock", Kind: "tui"}
	e := domain.Classify(r, live.Check(r))
	assert.Equal(t, domain.VerdictLive, e.Verdict, e.Reason)
	assert.Empty(t, e.Unchecked)
}
