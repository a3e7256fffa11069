//go:build unix

package fsregistry

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// fixtures are real registry files written by Claude Code 2.1.328 (paths
// and ids made neutral), beside a real key file.
const fixtures = "../../test/testdata/claude/registry"

const keyName = "4652.0000000000000000000000000000000000000000000000000000000000000000.key"

// copyFixtures copies the real records into a fresh sessions folder.
func copyFixtures(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.Mkdir(dir, 0o700))
	des, err := os.ReadDir(fixtures)
	require.NoError(t, err)
	for _, de := range des {
		data, err := os.ReadFile(filepath.Join(fixtures, de.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, de.Name()), data, 0o600))
	}
	return dir
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// age sets a file's mtime into the past so the torn-write retry does not apply.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))
}

func read(t *testing.T, dir string) ports.Snapshot {
	t.Helper()
	snap, err := New(dir).Read(context.Background())
	require.NoError(t, err)
	return snap
}

func byFile(snap ports.Snapshot) map[string]domain.Record {
	out := map[string]domain.Record{}
	for _, r := range snap.Records {
		out[r.File] = r
	}
	return out
}

func ms(v int64) time.Time { return time.UnixMilli(v) }

func TestReadRealFixtures(t *testing.T) {
	dir := copyFixtures(t)
	snap := read(t, dir)
	assert.Equal(t, dir, snap.Dir)
	assert.False(t, snap.Missing)
	require.Len(t, snap.Records, 2, "two records; the key file is not one")
	recs := byFile(snap)

	a := recs["4652.json"]
	assert.Empty(t, a.Problem)
	assert.Equal(t, filepath.Join(dir, "4652.json"), a.Path)
	assert.Equal(t, 4652, a.PID)
	assert.Equal(t, "26df9a5b-d23c-4223-a45d-b9ec61fda652", a.SessionID)
	assert.Equal(t, "/home/dev/src/shop", a.Cwd)
	assert.Equal(t, ms(1796027521308), a.StartedAt)
	assert.Equal(t, "35646", a.ProcStart)
	assert.Equal(t, "2.1.328", a.Version)
	assert.Equal(t, 1, a.PeerProtocol)
	assert.Equal(t, "interactive", a.Kind)
	assert.Equal(t, "cli", a.Entrypoint)
	assert.Equal(t, "linux:5f0c2a9e8b7d4c1fa3e6b9d2c4f8a1e7:pid:[4026531836]", a.PIDDomain)
	assert.Equal(t, "cc3:@2.%2", a.Tmux)
	assert.Equal(t, "/tmp/cc-socks/4652.sock", a.SocketPath)
	assert.Equal(t, "proj-89", a.Name)
	assert.Equal(t, "derived", a.NameSource)
	assert.Equal(t, ms(1796027521308), a.NameSince)
	assert.Equal(t, domain.StatusIdle, a.Status)
	assert.Equal(t, ms(1796027533912), a.UpdatedAt)
	assert.Equal(t, ms(1796027533912), a.StatusUpdatedAt)
	assert.Empty(t, a.Warnings)
	assert.False(t, a.ModTime.IsZero())

	b := recs["5031.json"]
	assert.Empty(t, b.Problem)
	assert.Equal(t, 5031, b.PID)
	assert.Equal(t, "build:main 50% ünï", b.Name, "JSON \\u escapes decode to the real name")
	assert.Equal(t, "user", b.NameSource)
	assert.Equal(t, "36764", b.ProcStart)
}

// TestKeyFilesAreNeverOpened proves with the kernel's inotify open events
// that Read opens the record files but never a *.key file, even one that is
// a FIFO (an open would block) or mode 0000.
func TestKeyFilesAreNeverOpened(t *testing.T) {
	dir := copyFixtures(t)
	fifoKey := "5031." + strings.Repeat("ab", 32) + ".key"
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, fifoKey), 0o600))
	lockedKey := write(t, dir, "6000."+strings.Repeat("cd", 32)+".key", `{"peerToken":"x"}`)
	require.NoError(t, os.Chmod(lockedKey, 0))
	write(t, dir, "plain.key", "secret")

	w := watchOpens(t, dir)
	done := make(chan ports.Snapshot, 1)
	go func() { snap, _ := New(dir).Read(context.Background()); done <- snap }()
	var snap ports.Snapshot
	select {
	case snap = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return within 10 s (did it open the FIFO key file?)")
	}
	opened := w.opened(t)
	assert.True(t, opened["4652.json"] && opened["5031.json"], "the watch sees record files opened: %v", opened)
	for name := range opened {
		assert.False(t, strings.HasSuffix(name, ".key"), "a key file was opened: %s", name)
	}
	for _, r := range snap.Records {
		assert.False(t, strings.HasSuffix(r.File, ".key"), "a key file was listed: %s", r.File)
	}
	assert.Len(t, snap.Records, 2)
}

func TestCandidate(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"4652.json", true},
		{"5031b.json", true}, // a candidate, reported misnamed
		{"x.json", true},     // a candidate: a folder by that name is reported unreadable
		{keyName, false},
		{"4652.json.key", false},
		{"4652.key", false},
		{".json", false},
		{".4652.json", false},
		{".4652.json.swp", false},
		{"4652.json.tmp", false},
		{"4652.json~", false},
		{"4652.json.12345", false},
		{"#4652.json#", false},
		{"4652.JSON", false},
		{"4652", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Candidate(tt.name))
		})
	}
}

// TestIgnoredFilesAreNotOpened: dot files, temp files and key files are
// neither listed nor opened.
func TestIgnoredFilesAreNotOpened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.Mkdir(dir, 0o700))
	good := `{"pid":4652,"sessionId":"s","kind":"interactive"}`
	write(t, dir, "4652.json", good)
	ignored := []string{".4652.json", ".4652.json.swp", "4652.json.tmp", "4652.json~", "4652.json.12345", "4652.key", "notes.txt"}
	for _, n := range ignored {
		write(t, dir, n, good)
	}
	w := watchOpens(t, dir)
	snap := read(t, dir)
	opened := w.opened(t)
	require.Len(t, snap.Records, 1)
	assert.Equal(t, "4652.json", snap.Records[0].File)
	assert.True(t, opened["4652.json"], "the watch works")
	for _, n := range ignored {
		assert.False(t, opened[n], "%s was opened", n)
	}
}

func TestFileHygiene(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.Mkdir(dir, 0o700))
	outside := t.TempDir()
	target := write(t, outside, "4652.json", `{"pid":4652,"sessionId":"s"}`)
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "4652.json")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(dir, "4653.json")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "x.json"), 0o700))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "4654.json"), 0o600))
	write(t, dir, "4655.json", `{"pid":4655}`+strings.Repeat(" ", MaxRecordBytes+1-len(`{"pid":4655}`)))
	write(t, dir, "4656.json", `{"pid":4656}`+strings.Repeat(" ", MaxRecordBytes-len(`{"pid":4656}`)))
	write(t, dir, "4657.json", "\xEF\xBB\xBF"+`{"pid":4657,"sessionId":"bom"}`)
	write(t, dir, "4658.json", `{"pid":4658}garbage`)
	write(t, dir, "4659.json", `{"pid":4659}{"pid":4659}`)
	write(t, dir, "4660.json", "{\"pid\":4660}\n\n  \t")
	write(t, dir, "4661.json", `{"pid":46`)
	for _, n := range []string{"4658.json", "4659.json", "4660.json", "4661.json"} {
		age(t, filepath.Join(dir, n))
	}

	w := watchOpens(t, dir, outside)
	snap := read(t, dir)
	opened := w.opened(t)
	recs := byFile(snap)

	tests := []struct {
		file    string
		verdict domain.Verdict // VerdictUnknown: no problem
		problem string
	}{
		{"4652.json", domain.VerdictUnreadable, "symlink, not followed"},
		{"4653.json", domain.VerdictUnreadable, "symlink, not followed"},
		{"x.json", domain.VerdictUnreadable, "not a regular file (d"},
		{"4654.json", domain.VerdictUnreadable, "not a regular file (p"},
		{"4655.json", domain.VerdictMalformed, "262145 bytes, over the 262144-byte cap; not read"},
		{"4656.json", domain.VerdictUnknown, ""},
		{"4657.json", domain.VerdictUnknown, ""},
		{"4658.json", domain.VerdictMalformed, "trailing data"},
		{"4659.json", domain.VerdictMalformed, "trailing data"},
		{"4660.json", domain.VerdictUnknown, ""},
		{"4661.json", domain.VerdictMalformed, "not a JSON record"},
	}
	require.Len(t, snap.Records, len(tests))
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, ok := recs[tt.file]
			require.True(t, ok)
			assert.Equal(t, tt.verdict, r.ProblemVerdict)
			if tt.problem == "" {
				assert.Empty(t, r.Problem)
				assert.Equal(t, tt.file, fmt.Sprintf("%d.json", r.PID))
			} else {
				assert.Contains(t, r.Problem, tt.problem)
			}
		})
	}
	assert.Equal(t, "bom", recs["4657.json"].SessionID)
	assert.False(t, opened["4652.json"] || opened["4653.json"] || opened["x.json"] || opened["4654.json"],
		"symlinks, folders and FIFOs are not opened: %v", opened)
	assert.False(t, opened["4655.json"], "the oversize file is not opened")
	assert.True(t, opened["4656.json"], "a file at exactly the cap is read")
	outsideOpened := false
	for n := range opened {
		if n == filepath.Base(target) && n != "4652.json" {
			outsideOpened = true
		}
	}
	assert.False(t, outsideOpened)
}

// TestSymlinkTargetNotOpened watches the symlink's target folder: following
// the link would open the target there.
func TestSymlinkTargetNotOpened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.Mkdir(dir, 0o700))
	outside := t.TempDir()
	target := write(t, outside, "target.json", `{"pid":4652,"sessionId":"s"}`)
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "4653.json")))
	w := watchOpens(t, outside)
	snap := read(t, dir)
	require.Len(t, snap.Records, 1)
	assert.Equal(t, domain.VerdictUnreadable, snap.Records[0].ProblemVerdict)
	assert.Equal(t, 4653, snap.Records[0].PID, "the file name's pid, not the target's")
	assert.Empty(t, snap.Records[0].SessionID, "nothing was read through the link")
	assert.False(t, w.opened(t)["target.json"], "the symlink target was opened")
}

func TestTornFileIsReadAgain(t *testing.T) {
	full := `{"pid":4652,"sessionId":"26df9a5b-d23c-4223-a45d-b9ec61fda652","name":"proj-89"}`
	torn := full[:20]
	tests := []struct {
		name       string
		old        bool   // mtime outside the fresh window
		rewrite    string // content written during the pause ("" = leave it torn)
		wantSleeps int
		wantOK     bool
	}{
		{"fresh, rewritten during the pause", false, full, 1, true},
		{"fresh, still torn for the whole grace", false, "", int(ports.RewriteGrace / (10 * time.Millisecond)), false},
		{"old torn file is not retried", true, full, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, "4652.json", torn)
			if tt.old {
				age(t, p)
			}
			reg := New(dir)
			var sleeps []time.Duration
			reg.sleep = func(d time.Duration) {
				sleeps = append(sleeps, d)
				if tt.rewrite != "" {
					require.NoError(t, os.WriteFile(p, []byte(tt.rewrite), 0o600))
				}
			}
			snap, err := reg.Read(context.Background())
			require.NoError(t, err)
			require.Len(t, snap.Records, 1)
			r := snap.Records[0]
			assert.Len(t, sleeps, tt.wantSleeps)
			for _, d := range sleeps {
				assert.Equal(t, 10*time.Millisecond, d, "the pause is short")
			}
			if tt.wantOK {
				assert.Empty(t, r.Problem)
				assert.Equal(t, "proj-89", r.Name)
			} else {
				assert.Equal(t, domain.VerdictMalformed, r.ProblemVerdict)
				assert.Contains(t, r.Problem, "not a JSON record")
			}
		})
	}
}

// Claude Code 2.1.332 rewrites its record in place: one write of the new
// record at offset 0, then ftruncate to its length (docs/CLAUDE-CODE-FACTS.md).
// Between the two a shorter record is followed by the old one's tail. A
// read that catches it reads again until the file parses, for up to
// RewriteGrace, however many pauses that takes: a list made then still
// lists the session.
func TestRecordCaughtBetweenWriteAndTruncateIsReadAgainUntilWhole(t *testing.T) {
	old := `{"pid":4652,"sessionId":"26df9a5b-d23c-4223-a45d-b9ec61fda652","name":"a-rather-long-name","status":"waiting","waitingFor":"dialog open"}`
	short := `{"pid":4652,"sessionId":"26df9a5b-d23c-4223-a45d-b9ec61fda652","name":"s0","status":"idle"}`
	for _, tc := range []struct {
		name   string
		pauses int // pauses before the ftruncate lands
		ok     bool
	}{
		{"truncated after 1 pause", 1, true},
		{"truncated after 4 pauses", 4, true},
		{"never truncated", 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, "4652.json", short+old[len(short):])
			reg := New(dir)
			var waited time.Duration
			reg.sleep = func(d time.Duration) {
				waited += d
				if waited/d == time.Duration(tc.pauses) {
					require.NoError(t, os.Truncate(p, int64(len(short))))
				}
			}
			snap, err := reg.Read(context.Background())
			require.NoError(t, err)
			require.Len(t, snap.Records, 1)
			r := snap.Records[0]
			if tc.ok {
				assert.Empty(t, r.Problem)
				assert.Equal(t, "s0", r.Name)
				return
			}
			assert.Equal(t, "trailing data after the JSON object", r.Problem)
			assert.LessOrEqual(t, waited, ports.RewriteGrace, "a record that stays torn costs at most the grace")
		})
	}
}

func TestTornRetryUsesTheInjectedClock(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "4652.json", `{"pid":46`)
	age(t, p) // an hour old by the wall clock...
	reg := New(dir)
	reg.now = func() time.Time { return time.Now().Add(-time.Hour) } // ...but fresh by the registry's clock
	calls := 0
	reg.sleep = func(time.Duration) { calls++ }
	_, err := reg.Read(context.Background())
	require.NoError(t, err)
	assert.Positive(t, calls, "read again: fresh by the registry's clock")
}

func TestMisnamed(t *testing.T) {
	dir := t.TempDir()
	rec := `{"pid":5031,"sessionId":"a8f89b60-f614-4b1f-b979-950c805fd8b1","kind":"interactive"}`
	write(t, dir, "5031b.json", rec)
	write(t, dir, "4652.json", rec)
	write(t, dir, "05031.json", rec)
	write(t, dir, "5031.json", rec)
	recs := byFile(read(t, dir))
	for _, f := range []string{"5031b.json", "4652.json", "05031.json"} {
		assert.Equal(t, domain.VerdictMisnamed, recs[f].ProblemVerdict, f)
		assert.Contains(t, recs[f].Problem, "file name "+f+" is not 5031.json for pid 5031")
		assert.Equal(t, 5031, recs[f].PID, "a misnamed record keeps its fields")
	}
	assert.Empty(t, recs["5031.json"].Problem)
}

// A record that could not be read or parsed has no pid of its own; it is
// shown under the pid its file name <pid>.json says (list --all, show).
func TestUnparsedRecordTakesItsFileNamesPID(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "4242.json", "not json")
	write(t, dir, "4243.json", `{"pid":"x"}`)
	write(t, dir, "4244.json", `{"pid":7,"kind":"interactive"}`) // keeps what it read
	write(t, dir, "04245.json", "not json")
	write(t, dir, "x4246.json", "not json")
	require.NoError(t, os.Symlink(filepath.Join(dir, "4242.json"), filepath.Join(dir, "4247.json")))
	got := map[string]int{}
	for f, r := range byFile(read(t, dir)) {
		require.NotEmpty(t, r.Problem, f)
		got[f] = r.PID
	}
	assert.Equal(t, map[string]int{"4242.json": 4242, "4243.json": 4243, "4244.json": 7,
		"04245.json": 0, "x4246.json": 0, "4247.json": 4247}, got)
}

func TestFolderCases(t *testing.T) {
	t.Run("missing folder is an empty snapshot", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope", "sessions")
		snap, err := New(dir).Read(context.Background())
		require.NoError(t, err)
		assert.True(t, snap.Missing)
		assert.Empty(t, snap.Records)
		assert.Equal(t, dir, snap.Dir)
	})
	t.Run("empty folder", func(t *testing.T) {
		snap := read(t, t.TempDir())
		assert.False(t, snap.Missing)
		assert.Empty(t, snap.Records)
	})
	t.Run("a file in place of the folder is an error", func(t *testing.T) {
		p := write(t, t.TempDir(), "sessions", "not a folder")
		_, err := New(p).Read(context.Background())
		require.Error(t, err)
		assert.ErrorIs(t, err, unix.ENOTDIR)
		assert.Contains(t, err.Error(), "read registry "+p+": ")
	})
	t.Run("an unreadable folder is an error", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "4652.json", `{"pid":4652}`)
		require.NoError(t, os.Chmod(dir, 0))
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		if _, err := os.ReadDir(dir); err == nil {
			t.Skip("this process can read a mode-0000 folder (it runs as root with CAP_DAC_OVERRIDE), so EACCES cannot be produced here; test/acceptance covers it by running the binary as another user")
		}
		_, err := New(dir).Read(context.Background())
		require.Error(t, err)
		assert.ErrorIs(t, err, fs.ErrPermission)
		assert.Contains(t, err.Error(), "read registry "+dir+": ")
	})
	t.Run("trailing slash", func(t *testing.T) {
		dir := copyFixtures(t)
		snap := read(t, dir+"/")
		assert.Len(t, snap.Records, 2)
	})
	t.Run("cancelled context", func(t *testing.T) {
		dir := copyFixtures(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := New(dir).Read(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestManyFilesReadConcurrently(t *testing.T) {
	dir := t.TempDir()
	for pid := 100; pid < 200; pid++ {
		write(t, dir, fmt.Sprintf("%d.json", pid), fmt.Sprintf(`{"pid":%d,"sessionId":"s%d"}`, pid, pid))
	}
	snap := read(t, dir)
	require.Len(t, snap.Records, 100)
	for i, r := range snap.Records {
		assert.Empty(t, r.Problem)
		assert.Equal(t, fmt.Sprintf("s%d", r.PID), r.SessionID)
		if i > 0 {
			assert.Less(t, snap.Records[i-1].File, r.File, "records are in file-name order")
		}
	}
}

type fileState struct {
	mode    fs.FileMode
	size    int64
	mtime   time.Time
	content [32]byte
	link    string
}

func folderState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		st := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular() && fi.Mode().Perm()&0o400 != 0:
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			st.content = sha256.Sum256(data)
		case fi.Mode()&fs.ModeSymlink != 0:
			st.link, err = os.Readlink(p)
			require.NoError(t, err)
		}
		out[p] = st
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestReadModifiesNothing: after reading a folder full of odd entries, the
// listing, modes, sizes, contents and mtimes are exactly as before.
func TestReadModifiesNothing(t *testing.T) {
	dir := copyFixtures(t)
	write(t, dir, "5031b.json", `{"pid":5031}`)
	write(t, dir, "7.json", `{"pid":7`)
	write(t, dir, "8.json", `{"pid":8} trailing`)
	write(t, dir, ".hidden.json", `{}`)
	write(t, dir, "9.json.tmp", `{}`)
	require.NoError(t, os.Symlink("4652.json", filepath.Join(dir, "10.json")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "11.json"), 0o700))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "12.json"), 0o600))
	reg := New(dir)
	reg.sleep = func(time.Duration) {}
	before := folderState(t, dir)
	dirBefore, err := os.Stat(dir)
	require.NoError(t, err)
	for range 3 {
		_, err := reg.Read(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, before, folderState(t, dir))
	dirAfter, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, dirBefore.ModTime(), dirAfter.ModTime(), "the folder's mtime: nothing created, renamed or removed")
}

func TestConfigDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		flag    string
		env     map[string]string
		want    string
		warning string
	}{
		{"flag wins", "/flag", map[string]string{"CLAUDE_CONFIG_DIR": "/env", "HOME": "/home/u"}, "/flag", ""},
		{"env when set", "", map[string]string{"CLAUDE_CONFIG_DIR": "/env", "HOME": "/home/u"}, "/env", ""},
		{"empty env means ~/.claude", "", map[string]string{"CLAUDE_CONFIG_DIR": "", "HOME": "/home/u"}, "/home/u/.claude", ""},
		{"unset env means ~/.claude", "", map[string]string{"HOME": "/home/u"}, "/home/u/.claude", ""},
		{"trailing slash", "", map[string]string{"CLAUDE_CONFIG_DIR": "/env/"}, "/env", ""},
		{"double slashes", "", map[string]string{"CLAUDE_CONFIG_DIR": "/a//b/"}, "/a/b", ""},
		{"literal tilde in env", "", map[string]string{"CLAUDE_CONFIG_DIR": "~/cfg", "HOME": "/home/u"}, "~/cfg", `CLAUDE_CONFIG_DIR "~/cfg" starts with a literal '~'`},
		{"literal tilde in flag", "~", nil, "~", `--config-dir "~" starts with a literal '~'`},
		{"tilde inside is fine", "", map[string]string{"CLAUDE_CONFIG_DIR": "/a/~b"}, "/a/~b", ""},
		{"relative flag", "cfg", map[string]string{"CLAUDE_CONFIG_DIR": "/env"}, "cfg", ""},
		{"relative flag with dots", "./a/../b/", nil, "b", ""},
		{"relative env", "", map[string]string{"CLAUDE_CONFIG_DIR": "../up/cfg"}, "../up/cfg", ""},
		{"relative home", "", map[string]string{"HOME": "home/u"}, "home/u/.claude", ""},
	}
	// Relative values are taken against the caller's working directory.
	wd := t.TempDir()
	t.Chdir(wd)
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := ConfigDir(tt.flag, env(tt.env))
			require.NoError(t, err)
			want := tt.want
			if !filepath.IsAbs(want) {
				want = filepath.Join(wd, want)
			}
			assert.Equal(t, want, got)
			assert.True(t, filepath.IsAbs(got), "%q is not absolute", got)
			if tt.warning == "" {
				assert.Empty(t, warnings)
			} else {
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0], tt.warning)
			}
		})
	}
	assert.Equal(t, filepath.Join("/c", "sessions"), SessionsDir("/c"))
}
