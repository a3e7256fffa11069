//go:build linux

package procliveness_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/adapters/procliveness"
	"github.com/peerctl/peerctl/domain"
)

// stat builds a /proc/<pid>/stat line whose command name is comm and whose
// field 22 is start.
func stat(pid int, comm, start string) string { return statIn("S", pid, comm, start) }

// statIn is stat with process state state (field 3).
func statIn(state string, pid int, comm, start string) string {
	f := []string{state, "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", start, "999", "1000"}
	return strconv.Itoa(pid) + " (" + comm + ") " + strings.Join(f, " ") + "\n"
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
		err  string
	}{
		{"plain", stat(4652, "claude", "35646"), "35646", ""},
		{"real line", "4652 (claude) S 4640 4652 4640 34816 4652 4194560 28507 0 0 0 112 24 0 0 20 0 11 0 35646 74653696 51264 18446744073709551615 1 1 0 0 0 0 0 16781312 83492 0 0 0 17 3 0 0 0 0 0\n", "35646", ""},
		{"name with )", stat(1, "a)b", "77"), "77", ""},
		{"name with spaces", stat(1, "my prog name", "78"), "78", ""},
		{"name faking fields", stat(1, "x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 666", "79"), "79", ""},
		{"name is just )", stat(1, ")", "80"), "80", ""},
		{"name with ( and newline", stat(1, "(\n(", "81"), "81", ""},
		{"no )", "1 (claude S 1 2", "", "no ')'"},
		{"too few fields", "1 (claude) S 1 2 3", "", "has 4 fields after the command name"},
		{"empty", "", "", "no ')'"},
		{"field 22 not a number", stat(1, "c", "x12"), "", `field 22 "x12" is not a number`},
		{"field 22 negative", stat(1, "c", "-5"), "", "not a number"},
		{"state not a letter", statIn("SS", 1, "c", "82"), "", `field 3 "SS" is not a state letter`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := procliveness.ParseStat([]byte(tt.data))
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// fakeProc is a fake /proc root: self/ns/pid and <pid>/stat files.
type fakeProc struct {
	root, machineID string
}

const ourDomain = "linux:0123456789abcdef0123456789abcdef:pid:[4026531836]"

func newFakeProc(t *testing.T) fakeProc {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "self", "ns"), 0o755))
	require.NoError(t, os.Symlink("pid:[4026531836]", filepath.Join(root, "self", "ns", "pid")))
	mid := filepath.Join(t.TempDir(), "machine-id")
	require.NoError(t, os.WriteFile(mid, []byte("0123456789abcdef0123456789abcdef\n"), 0o644))
	return fakeProc{root: root, machineID: mid}
}

func (f fakeProc) setStat(t *testing.T, pid int, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(f.root, strconv.Itoa(pid)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, strconv.Itoa(pid), "stat"), []byte(content), 0o644))
}

// kills returns a fake kill(pid, 0) that answers errs in turn (the last one
// repeats) and counts its calls.
func kills(calls *int, errs ...error) func(int) error {
	return func(int) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return errs[len(errs)-1]
	}
}

func TestCheck(t *testing.T) {
	const pid = 4652
	tests := []struct {
		name      string
		procStart string
		pidDomain string
		stat      string // "" = no /proc/<pid>/stat; "DIR" = a folder in its place
		kill      []error
		noMachine bool
		alive     domain.Tri
		start     domain.Tri
		dom       domain.Tri
		actual    string
		unchecked string // part of one Unchecked item; "" means none
		kills     int
		verdict   domain.Verdict
	}{
		{"alive, start matches", "35646", "", stat(pid, "claude", "35646"), []error{nil}, false, domain.Yes, domain.Yes, domain.Unknown, "35646", "", 1, domain.VerdictLive},
		{"EPERM is alive", "35646", "", stat(pid, "claude", "35646"), []error{unix.EPERM}, false, domain.Yes, domain.Yes, domain.Unknown, "35646", "", 1, domain.VerdictLive},
		{"ESRCH is dead", "35646", "", stat(pid, "claude", "35646"), []error{unix.ESRCH}, false, domain.No, domain.Unknown, domain.Unknown, "", "", 1, domain.VerdictStale},
		{"other errno is unknown", "35646", "", stat(pid, "claude", "35646"), []error{unix.EINVAL}, false, domain.Unknown, domain.Unknown, domain.Unknown, "", "kill(4652, 0): invalid argument", 1, domain.VerdictStale},
		{"start mismatch is reuse", "35646", "", stat(pid, "claude", "99999"), []error{nil}, false, domain.Yes, domain.No, domain.Unknown, "99999", "", 1, domain.VerdictReused},
		{"start as tricky name", "35646", "", stat(pid, "x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 35646", "1"), []error{nil}, false, domain.Yes, domain.No, domain.Unknown, "1", "", 1, domain.VerdictReused},
		// A zombie's start time is still compared: Claude Code's own listing
		// shows a zombie, and the identity rule needs to know if it is the
		// record's process (domain.Entry.HarnessMayList).
		{"zombie: exited, not yet reaped", "35646", "", statIn("Z", pid, "claude", "35646"), []error{nil}, false, domain.No, domain.Yes, domain.Unknown, "35646", "", 1, domain.VerdictStale},
		{"dead (X): exited", "35646", "", statIn("X", pid, "claude", "35646"), []error{nil}, false, domain.No, domain.Yes, domain.Unknown, "35646", "", 1, domain.VerdictStale},
		{"zombie without procStart", "", "", statIn("Z", pid, "claude", "35646"), []error{nil}, false, domain.No, domain.Unknown, domain.Unknown, "", "", 1, domain.VerdictStale},
		{"zombie whose start differs is still exited", "35646", "", statIn("Z", pid, "claude", "99999"), []error{nil}, false, domain.No, domain.No, domain.Unknown, "99999", "", 1, domain.VerdictStale},
		{"procStart missing", "", "", stat(pid, "claude", "35646"), []error{nil}, false, domain.Yes, domain.Unknown, domain.Unknown, "", "record has no procStart", 1, domain.VerdictLive},
		{"stat unreadable is unknown, never mismatch", "35646", "", "DIR", []error{nil}, false, domain.Yes, domain.Unknown, domain.Unknown, "", "procStart not checked", 1, domain.VerdictLive},
		{"stat garbled is unknown", "35646", "", "garbage", []error{nil}, false, domain.Yes, domain.Unknown, domain.Unknown, "", "procStart not checked: stat has no ')'", 1, domain.VerdictLive},
		{"stat hidden while the pid is alive (hidepid) is unknown", "35646", "", "", []error{unix.EPERM}, false, domain.Yes, domain.Unknown, domain.Unknown, "", "/4652 is not visible while the pid is alive", 2, domain.VerdictLive},
		{"stat gone because the pid exited", "35646", "", "", []error{nil, unix.ESRCH}, false, domain.No, domain.Unknown, domain.Unknown, "", "", 2, domain.VerdictStale},
		{"pidDomain ours", "35646", ourDomain, stat(pid, "claude", "35646"), []error{nil}, false, domain.Yes, domain.Yes, domain.Yes, "35646", "", 1, domain.VerdictLive},
		// A foreign pid is probed all the same: Claude Code's own listing
		// ignores pidDomain, and the identity rule needs to know what it shows.
		{"pidDomain other namespace: still probed", "35646", "linux:0123456789abcdef0123456789abcdef:pid:[4026532000]", stat(pid, "claude", "35646"), []error{nil}, false, domain.Yes, domain.Yes, domain.No, "35646", "", 1, domain.VerdictForeign},
		{"pidDomain other machine", "35646", "linux:ffffffffffffffffffffffffffffffff:pid:[4026531836]", stat(pid, "claude", "35646"), []error{nil}, false, domain.Yes, domain.Yes, domain.No, "35646", "", 1, domain.VerdictForeign},
		{"pidDomain other machine, pid not running here", "35646", "linux:ffffffffffffffffffffffffffffffff:pid:[4026531836]", "", []error{unix.ESRCH}, false, domain.No, domain.Unknown, domain.No, "", "", 1, domain.VerdictForeign},
		{"pidDomain present, ours unknown", "35646", ourDomain, stat(pid, "claude", "35646"), []error{nil}, true, domain.Yes, domain.Yes, domain.Unknown, "35646", "pidDomain not checked: read machine id", 1, domain.VerdictLive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProc(t)
			switch tt.stat {
			case "":
			case "DIR":
				require.NoError(t, os.MkdirAll(filepath.Join(fp.root, strconv.Itoa(pid), "stat"), 0o755))
			default:
				fp.setStat(t, pid, tt.stat)
			}
			mid := fp.machineID
			if tt.noMachine {
				mid = filepath.Join(t.TempDir(), "absent")
			}
			calls := 0
			c := procliveness.New(procliveness.WithProcRoot(fp.root), procliveness.WithMachineIDPath(mid), procliveness.WithKill(kills(&calls, tt.kill...)))
			rec := domain.Record{File: "4652.json", PID: pid, SessionID: "s", Name: "n", SocketPath: "/s", Kind: "interactive", ProcStart: tt.procStart, PIDDomain: tt.pidDomain}
			l := c.Check(rec)
			assert.Equal(t, tt.alive, l.Alive, "alive")
			assert.Equal(t, tt.start, l.StartMatches, "start matches")
			assert.Equal(t, tt.dom, l.DomainMatches, "domain matches")
			assert.Equal(t, tt.actual, l.ActualStart)
			assert.Equal(t, tt.kills, calls, "kill calls")
			unchecked := l.Unchecked
			if tt.pidDomain == "" {
				// A record without pidDomain says so, as docs/REGISTRY.md promises.
				require.NotEmpty(t, unchecked)
				assert.Equal(t, "record has no pidDomain; pid namespace not checked", unchecked[0])
				unchecked = unchecked[1:]
			}
			if tt.unchecked == "" {
				assert.Empty(t, unchecked)
			} else {
				assert.Contains(t, strings.Join(unchecked, "\n"), tt.unchecked)
			}
			e := domain.Classify(rec, l)
			assert.Equal(t, tt.verdict, e.Verdict)
			if strings.HasPrefix(tt.stat, strconv.Itoa(pid)+" (claude) Z") || strings.HasPrefix(tt.stat, strconv.Itoa(pid)+" (claude) X") {
				assert.True(t, l.Zombie)
				assert.Equal(t, "pid 4652 has exited (zombie, not yet reaped)", e.Reason)
			} else {
				assert.False(t, l.Zombie)
			}
		})
	}
}

func TestCheckNoPID(t *testing.T) {
	fp := newFakeProc(t)
	calls := 0
	c := procliveness.New(procliveness.WithProcRoot(fp.root), procliveness.WithMachineIDPath(fp.machineID), procliveness.WithKill(kills(&calls, nil)))
	l := c.Check(domain.Record{})
	assert.Equal(t, domain.Unknown, l.Alive)
	assert.Zero(t, calls, "pid 0 would signal our own process group")
	assert.Contains(t, l.Unchecked, "no pid")
}

func TestOurDomain(t *testing.T) {
	fp := newFakeProc(t)
	got, err := procliveness.OurDomain(fp.root, fp.machineID)
	require.NoError(t, err)
	assert.Equal(t, ourDomain, got)

	empty := filepath.Join(t.TempDir(), "machine-id")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o644))
	_, err = procliveness.OurDomain(fp.root, empty)
	assert.ErrorContains(t, err, "is empty")

	_, err = procliveness.OurDomain(t.TempDir(), fp.machineID)
	assert.ErrorContains(t, err, "read pid namespace")

	c := procliveness.New(procliveness.WithProcRoot(fp.root), procliveness.WithMachineIDPath(fp.machineID))
	d, err := c.Domain()
	require.NoError(t, err)
	assert.Equal(t, ourDomain, d)
}

// The real machine: our own process, a live pid with the wrong start time,
// and a pid we started and reaped.
func TestCheckRealProcesses(t *testing.T) {
	c := procliveness.New()
	ourStart, err := procliveness.StartTime("/proc", os.Getpid())
	require.NoError(t, err)
	base := domain.Record{File: strconv.Itoa(os.Getpid()) + ".json", PID: os.Getpid(), SessionID: "s", Name: "n", SocketPath: "/s", Kind: "interactive"}

	t.Run("our own pid with its real start time is live", func(t *testing.T) {
		r := base
		r.ProcStart = ourStart
		if d, err := c.Domain(); err == nil {
			r.PIDDomain = d
		}
		l := c.Check(r)
		e := domain.Classify(r, l)
		assert.Equal(t, domain.VerdictLive, e.Verdict, e.Reason)
		assert.Equal(t, domain.Yes, l.StartMatches)
		assert.Empty(t, l.Unchecked)
	})
	t.Run("a live pid with a wrong procStart is reused", func(t *testing.T) {
		r := base
		n, err := strconv.ParseUint(ourStart, 10, 64)
		require.NoError(t, err)
		r.ProcStart = strconv.FormatUint(n+1, 10)
		e := domain.Classify(r, c.Check(r))
		assert.Equal(t, domain.VerdictReused, e.Verdict)
		assert.Contains(t, e.Reason, "record says procStart "+r.ProcStart)
	})
	t.Run("a reaped pid is stale", func(t *testing.T) {
		cmd := exec.Command("sleep", "60")
		require.NoError(t, cmd.Start())
		pid := cmd.Process.Pid
		start, err := procliveness.StartTime("/proc", pid)
		require.NoError(t, err)
		r := base
		r.PID, r.File, r.ProcStart = pid, strconv.Itoa(pid)+".json", start
		require.Equal(t, domain.VerdictLive, domain.Classify(r, c.Check(r)).Verdict, "precondition: live while running")
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait() // reaped: the pid no longer exists
		e := domain.Classify(r, c.Check(r))
		assert.Equal(t, domain.VerdictStale, e.Verdict, e.Reason)
	})
	t.Run("an exited, unreaped pid (zombie) is stale", func(t *testing.T) {
		cmd := exec.Command("sleep", "60")
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pid := cmd.Process.Pid
		start, err := procliveness.StartTime("/proc", pid)
		require.NoError(t, err)
		r := base
		r.PID, r.File, r.ProcStart = pid, strconv.Itoa(pid)+".json", start
		require.NoError(t, cmd.Process.Kill()) // not waited for: stays a zombie
		require.Eventually(t, func() bool {
			st, err := procliveness.ReadStat("/proc", pid)
			return err == nil && st.State == 'Z'
		}, 10*time.Second, 10*time.Millisecond, "precondition: pid %d becomes a zombie", pid)
		require.NoError(t, unix.Kill(pid, 0), "precondition: kill(pid, 0) still succeeds on a zombie")
		e := domain.Classify(r, c.Check(r))
		assert.Equal(t, domain.VerdictStale, e.Verdict, e.Reason)
		assert.Equal(t, fmt.Sprintf("pid %d has exited (zombie, not yet reaped)", pid), e.Reason)
	})
	t.Run("our real pid domain has the documented shape", func(t *testing.T) {
		d, err := c.Domain()
		if err != nil {
			t.Skipf("no pid domain on this machine: %v", err)
		}
		assert.Regexp(t, `^linux:[0-9a-f]+:pid:\[[0-9]+\]$`, d)
	})
}
