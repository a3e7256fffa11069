package acceptance

// Helpers for the bad-input catalogue (catalogue_*_test.go): live helper
// processes, crafted registry records, a registry snapshot that proves the
// folder was not touched, and a recording Unix listener.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"

	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catSessionID returns a fresh random UUID-shaped session id.
func catSessionID(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// catRecord is a record in the shape Claude Code 2.1.328 writes, for a live
// pid: its real procStart, our pid domain, epoch-millisecond timestamps.
func catRecord(t testing.TB, pid int, name, socket string) map[string]any {
	t.Helper()
	now := time.Now().UnixMilli()
	rec := map[string]any{
		"pid": pid, "sessionId": catSessionID(t), "cwd": "/home/dev/src/shop", "startedAt": now - 60_000,
		"procStart": regProcStart(t, pid), "version": "2.1.328", "peerProtocol": 1,
		"peerFeatures": []string{"notify_idle"}, "kind": "interactive", "entrypoint": "cli",
		"pidDomain": regDomain(t), "asksForConvertedSkills": nil, "name": name, "nameSource": "user",
		"nameSince": now - 60_000, "status": "idle", "updatedAt": now - 1000,
	}
	if socket != "" {
		rec["messagingSocketPath"] = socket
	}
	return rec
}

// catRegistry makes <config>/sessions and returns both paths.
func catRegistry(t testing.TB) (config, sessions string) {
	t.Helper()
	config = t.TempDir()
	sessions = filepath.Join(config, "sessions")
	require.NoError(t, os.Mkdir(sessions, 0o700))
	return config, sessions
}

// catWrite writes data as sessions/<file>, dated an hour ago (so a reader
// never takes it for a record caught mid-write, and mtimes are comparable).
func catWrite(t testing.TB, sessions, file string, data []byte) {
	t.Helper()
	p := filepath.Join(sessions, file)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(p, old, old))
}

// catWriteJSON writes rec as JSON (see catWrite).
func catWriteJSON(t testing.TB, sessions, file string, rec any) {
	t.Helper()
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	catWrite(t, sessions, file, b)
}

// catFile names a pid's record file.
func catFile(pid int) string { return strconv.Itoa(pid) + ".json" }

// catEntry is what one registry entry looks like from outside: never read
// through a symlink.
type catEntry struct {
	Mode  fs.FileMode
	Size  int64
	MTime time.Time
}

// catSnapshot lists the folder itself and every entry in it (Lstat only).
func catSnapshot(t testing.TB, dir string) map[string]catEntry {
	t.Helper()
	out := map[string]catEntry{}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out
	}
	require.NoError(t, err)
	out["."] = catEntry{fi.Mode(), 0, fi.ModTime()} // a folder's size varies by file system; its mtime does not lie
	if !fi.IsDir() {
		out["."] = catEntry{fi.Mode(), fi.Size(), fi.ModTime()}
		return out
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return out // unreadable for us too: the folder's own entry still counts
	}
	for _, de := range des {
		fi, err := os.Lstat(filepath.Join(dir, de.Name()))
		require.NoError(t, err)
		out[de.Name()] = catEntry{fi.Mode(), fi.Size(), fi.ModTime()}
	}
	return out
}

// catRun runs peerctl and asserts afterwards that nothing in the registry
// folder changed: same names, modes, sizes and modification times.
func catRun(t testing.TB, sessions string, o runOpts, args ...string) result {
	t.Helper()
	before := catSnapshot(t, sessions)
	r := runPeerctl(t, o, args...)
	assert.Equal(t, before, catSnapshot(t, sessions), "peerctl %q modified the registry folder", args)
	return r
}

// catListEntry is the part of `list --json` the catalogue checks.
type catListEntry struct {
	SessionID     string   `json:"sessionId"`
	PID           int      `json:"pid"`
	Name          string   `json:"name"`
	StartedAt     string   `json:"startedAt"`
	SocketPath    string   `json:"socketPath"`
	Endpoint      string   `json:"endpoint"`
	Addressable   bool     `json:"addressable"`
	Unaddressable string   `json:"unaddressable"`
	Verdict       string   `json:"verdict"`
	Reason        string   `json:"reason"`
	File          string   `json:"file"`
	Warnings      []string `json:"warnings"`
}

// catList runs `list --all --json` (or without --all) and decodes it.
func catList(t testing.TB, config, sessions string, all bool) []catListEntry {
	t.Helper()
	args := []string{"--config-dir", config, "list", "--json"}
	if all {
		args = append(args, "--all")
	}
	r := catRun(t, sessions, runOpts{}, args...)
	require.Equal(t, 0, r.Code, "list: stderr %s", r.Stderr)
	var out []catListEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &out), "list output: %s", r.Stdout)
	return out
}

// catByFile finds the entry for a file name.
func catByFile(t testing.TB, entries []catListEntry, file string) catListEntry {
	t.Helper()
	// JSON carries names as UTF-8: an invalid byte arrives as U+FFFD.
	for _, e := range entries {
		if e.File == strings.ToValidUTF8(file, "\uFFFD") {
			return e
		}
	}
	require.Failf(t, "no entry", "no entry for file %q in %+v", file, entries)
	return catListEntry{}
}

// catSocketDir makes a short folder for sockets (a Unix socket address holds
// 107 bytes; test temp folders can be long).
func catSocketDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pcs")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// catNoControl fails when out holds a control byte other than newline, or
// a C1 control, or invalid UTF-8 (a lone 0x9b is a terminal CSI).
func catNoControl(t testing.TB, out []byte) {
	t.Helper()
	s := string(out)
	for i, r := range s {
		bad := (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0)
		if r == 0xfffd && len(s) > i && s[i] != 0xef { // invalid byte, not a real U+FFFD
			bad = true
		}
		if bad {
			assert.Failf(t, "raw control character in table output", "byte offset %d (%U) in %q", i, r, s)
			return
		}
	}
}
