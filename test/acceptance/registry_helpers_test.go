package acceptance

// Helpers for the registry tests (registry_test.go, oracle_live_test.go): a
// crafted registry of records covering every verdict, written for helper
// processes this test starts, so their pids are really live.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testproc"
)

// regProcStart reads field 22 of /proc/<pid>/stat (start time in clock
// ticks since boot) without the adapter under test: the command name runs
// to the last ')'.
func regProcStart(t testing.TB, pid int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	require.NoError(t, err)
	i := bytes.LastIndexByte(data, ')')
	require.Positive(t, i)
	f := strings.Fields(string(data[i+1:]))
	require.Greater(t, len(f), 19)
	return f[19]
}

// regDomain is this machine's pid domain as Claude Code 2.1.328 writes it,
// read without the adapter under test. Without a machine id the test is
// skipped: records could not carry one.
func regDomain(t testing.TB) string {
	t.Helper()
	mid, err := os.ReadFile("/etc/machine-id")
	if err != nil || strings.TrimSpace(string(mid)) == "" {
		t.Skipf("no machine id here (%v): records are written without a pid domain", err)
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	return "linux:" + strings.TrimSpace(string(mid)) + ":" + ns
}

// regCase is one crafted record and what is expected of it.
type regCase struct {
	Label     string
	PID       int
	File      string
	SessionID string // "" when the record has none
	// Verdict is what `peerctl list --all --json` must say.
	Verdict string
	// Reason is part of our reason ("" to skip the check).
	Reason string
	// Oracle is whether `claude agents --json` (2.1.328) lists it.
	Oracle bool
	// Divergence explains, when Oracle != (Verdict == "live"), why we
	// disagree with Claude Code on purpose.
	Divergence string
}

// regRegistry is a crafted config dir.
type regRegistry struct {
	ConfigDir string
	Sessions  string
	Cases     []regCase
	// Ignored are names in the folder that must not appear at all.
	Ignored []string
}

// craftRegistry writes at least 12 records into a fresh config dir, one per
// rule of issue 4 item 6 and more, each for its own helper process.
func craftRegistry(t testing.TB) *regRegistry {
	t.Helper()
	cfg := t.TempDir()
	r := &regRegistry{ConfigDir: cfg, Sessions: filepath.Join(cfg, "sessions")}
	require.NoError(t, os.Mkdir(r.Sessions, 0o700))
	ourDomain := regDomain(t)
	n := 0
	// add writes body (a JSON object, or raw bytes when raw) under file and
	// records the case. fields may use {PID}, {START}, {SID}.
	add := func(c regCase, file string, body string) {
		n++
		if c.SessionID == "-" {
			c.SessionID = ""
		} else {
			c.SessionID = fmt.Sprintf("%08x-0000-4000-8000-%012d", n, c.PID)
		}
		if file == "" {
			file = strconv.Itoa(c.PID) + ".json"
		}
		c.File = file
		body = strings.NewReplacer("{PID}", strconv.Itoa(c.PID), "{SID}", c.SessionID).Replace(body)
		if strings.Contains(body, "{START}") {
			body = strings.ReplaceAll(body, "{START}", regProcStart(t, c.PID))
		}
		require.NoError(t, os.WriteFile(filepath.Join(r.Sessions, file), []byte(body), 0o600))
		r.Cases = append(r.Cases, c)
	}
	// full is a complete 2.1.328-shaped record; extra replaces or adds fields.
	full := func(extra map[string]any, drop ...string) string {
		m := map[string]any{
			"pid": "{PID}", "sessionId": "{SID}", "cwd": "/home/dev/src/shop", "startedAt": 1796027521308,
			"procStart": "{START}", "version": "2.1.328", "peerProtocol": 1, "kind": "interactive",
			"entrypoint": "cli", "pidDomain": ourDomain, "messagingSocketPath": craftedSocks + "/{PID}.sock",
			"name": "peer-{PID}", "nameSource": "derived", "status": "idle", "updatedAt": 1796027533912,
		}
		for k, v := range extra {
			m[k] = v
		}
		for _, k := range drop {
			delete(m, k)
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		// pid is a number in real records.
		return strings.Replace(string(b), `"pid":"{PID}"`, `"pid":{PID}`, 1)
	}

	add(regCase{Label: "procStart right, as a string", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "", full(nil))
	add(regCase{Label: "procStart right, as a number", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(nil), `"procStart":"{START}"`, `"procStart":{START}`, 1))
	add(regCase{Label: "procStart wrong (pid reuse)", PID: testproc.Sleeper(t), Verdict: "reused", Reason: "record says procStart 1"}, "", full(map[string]any{"procStart": "1"}))
	add(regCase{Label: "procStart missing", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "", full(nil, "procStart"))
	add(regCase{Label: "procStart null", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "", full(map[string]any{"procStart": nil}))
	pid := testproc.Sleeper(t)
	add(regCase{Label: "misnamed file", PID: pid, Verdict: "misnamed", Reason: "is not " + strconv.Itoa(pid) + ".json"}, strconv.Itoa(pid)+"b.json", full(nil))
	add(regCase{Label: "kind print", PID: testproc.Sleeper(t), Verdict: "headless", Reason: `kind "print"`}, "", full(map[string]any{"kind": "print"}))
	add(regCase{Label: "kind background", PID: testproc.Sleeper(t), Verdict: "headless", Reason: `kind "background"`}, "", full(map[string]any{"kind": "background"}))
	add(regCase{Label: "kind bg", PID: testproc.Sleeper(t), Verdict: "headless", Reason: `kind "bg"`, Oracle: true,
		Divergence: "stricter on purpose: a background session is not a peer to send to; claude agents 2.1.328 lists it (as kind background), and the identity rule counts it"},
		"", full(map[string]any{"kind": "bg"}))
	add(regCase{Label: "no kind", PID: testproc.Sleeper(t), Verdict: "headless", Reason: "no kind"}, "", full(nil, "kind"))
	add(regCase{Label: "no name", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "", full(nil, "name", "nameSource"))
	add(regCase{Label: "no session id", PID: testproc.Sleeper(t), SessionID: "-", Verdict: "live", Oracle: true}, "", full(nil, "sessionId"))
	add(regCase{Label: "name of the wrong type", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "", full(map[string]any{"name": 5}))
	// Keys are read exactly, the last duplicate winning, escapes decoded
	// (JavaScript's JSON.parse); Go's encoding/json alone would take "Name"
	// for name and "PID" for pid. The oracle test also compares names.
	add(regCase{Label: "name, then Name", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(nil), `"name":"peer-{PID}"`, `"name":"peer-{PID}","Name":"other-{PID}"`, 1))
	add(regCase{Label: "pid, then PID of a dead process", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(nil), `"pid":{PID}`, `"pid":{PID},"PID":`+strconv.Itoa(testproc.DeadPID(t)), 1))
	add(regCase{Label: "escaped key", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(nil), `"name":"peer-{PID}"`, `"n\u0061me":"escaped-{PID}"`, 1))
	// Numbers by value, as JavaScript reads them.
	add(regCase{Label: "pid and procStart written as floats", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(strings.Replace(full(nil), `"pid":{PID}`, `"pid":{PID}.0`, 1), `"procStart":"{START}"`, `"procStart":{START}.0`, 1))
	add(regCase{Label: "a timestamp that is a word", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		full(map[string]any{"startedAt": "today"}))
	// procStartFt (a string) is checked before procStart; a procStart
	// written as a number is not compared by Claude Code at all.
	add(regCase{Label: "procStartFt right, procStart wrong", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(map[string]any{"procStart": "1"}), `"procStart":"1"`, `"procStart":"1","procStartFt":"{START}"`, 1))
	add(regCase{Label: "procStartFt wrong, procStart right", PID: testproc.Sleeper(t), Verdict: "reused", Reason: "record says procStartFt 1"}, "",
		strings.Replace(full(nil), `"procStart":"{START}"`, `"procStart":"{START}","procStartFt":"1"`, 1))
	add(regCase{Label: "procStart a wrong number", PID: testproc.Sleeper(t), Verdict: "reused", Reason: "record says procStart 1", Oracle: true,
		Divergence: "stricter on purpose: a procStart that names another process is a reused pid however it is written; claude agents 2.1.328 compares only a string (the identity rule counts such a record)"},
		"", full(map[string]any{"procStart": 1}))
	// An empty string is a value to Claude Code: it never matches, it parks.
	add(regCase{Label: "procStart an empty string", PID: testproc.Sleeper(t), Verdict: "reused", Reason: `record says procStart ""`}, "", full(map[string]any{"procStart": ""}))
	add(regCase{Label: "parkedJobId an empty string", PID: testproc.Sleeper(t), Verdict: "headless", Reason: "parked"}, "", full(map[string]any{"parkedJobId": ""}))
	add(regCase{Label: "parked job", PID: testproc.Sleeper(t), Verdict: "headless", Reason: "parked"}, "", full(map[string]any{"parkedJobId": "job-1"}))
	add(regCase{Label: "over 256 KiB", PID: testproc.Sleeper(t), Verdict: "malformed", Reason: "over the 262144-byte cap"}, "",
		full(map[string]any{"pad": strings.Repeat("x", 256<<10)}))
	canon := testproc.Sleeper(t)
	add(regCase{Label: "<pid>.json whose record names another pid", PID: canon, Verdict: "misnamed", Reason: "is not", Oracle: true,
		Divergence: "stricter on purpose: the record's pid must be its file's; claude agents 2.1.328 takes the pid from the file name (the identity rule counts such a record)"},
		"", strings.Replace(full(nil), `"pid":{PID}`, `"pid":`+strconv.Itoa(testproc.Sleeper(t)), 1))
	add(regCase{Label: "pid as a string", PID: testproc.Sleeper(t), Verdict: "live", Oracle: true}, "",
		strings.Replace(full(nil), `"pid":{PID}`, `"pid":"{PID}"`, 1))
	add(regCase{Label: "dead pid", PID: testproc.DeadPID(t), Verdict: "stale", Reason: "is not running"}, "", full(map[string]any{"procStart": "12345"}))
	add(regCase{Label: "foreign pidDomain", PID: testproc.Sleeper(t), Verdict: "foreign", Reason: "pidDomain linux:ffffffffffffffffffffffffffffffff:pid:[4026531836] is not ours",
		Oracle:     true,
		Divergence: "stricter on purpose: a record from another machine or pid namespace names a pid that means nothing here; claude agents 2.1.328 ignores pidDomain"},
		"", full(map[string]any{"pidDomain": "linux:ffffffffffffffffffffffffffffffff:pid:[4026531836]"}))
	add(regCase{Label: "torn JSON", PID: testproc.Sleeper(t), Verdict: "malformed", Reason: "not a JSON record"}, "", full(nil)[:40])
	add(regCase{Label: "trailing garbage", PID: testproc.Sleeper(t), Verdict: "malformed", Reason: "trailing data"}, "", full(nil)+"garbage")
	add(regCase{Label: "UTF-8 BOM", PID: testproc.Sleeper(t), Verdict: "live",
		Divergence: "lenient on purpose (issue 4: a UTF-8 BOM is tolerated); claude agents 2.1.328 drops such a record"},
		"", "\xEF\xBB\xBF"+full(nil))
	// A symlink to a good record elsewhere: never followed.
	pid = testproc.Sleeper(t)
	outside := filepath.Join(t.TempDir(), "elsewhere.json")
	body := strings.NewReplacer("{PID}", strconv.Itoa(pid), "{START}", regProcStart(t, pid), "{SID}", "ffffffff-0000-4000-8000-000000000000").Replace(full(nil))
	require.NoError(t, os.WriteFile(outside, []byte(body), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(r.Sessions, strconv.Itoa(pid)+".json")))
	r.Cases = append(r.Cases, regCase{Label: "symlink", PID: 0, File: strconv.Itoa(pid) + ".json", Verdict: "unreadable", Reason: "symlink, not followed"})

	// Old enough that the torn-write retry does not apply to the bad files.
	old := time.Now().Add(-time.Hour)
	for _, c := range r.Cases {
		if c.Verdict == "malformed" {
			require.NoError(t, os.Chtimes(filepath.Join(r.Sessions, c.File), old, old))
		}
	}
	// Names that are never records (and never opened): a key file, dot and temp files.
	for _, name := range []string{strconv.Itoa(r.Cases[0].PID) + "." + strings.Repeat("0", 64) + ".key", ".hidden.json", r.Cases[0].File + ".tmp", r.Cases[0].File + "~"} {
		require.NoError(t, os.WriteFile(filepath.Join(r.Sessions, name), []byte(full(nil)), 0o600))
		r.Ignored = append(r.Ignored, name)
	}
	return r
}

// regListed is one object of `peerctl list --all --json` (the fields these tests read).
type regListed struct {
	SessionID   string `json:"sessionId"`
	PID         int    `json:"pid"`
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Verdict     string `json:"verdict"`
	Reason      string `json:"reason"`
	File        string `json:"file"`
	Addressable bool   `json:"addressable"`
	Endpoint    string `json:"endpoint"`
}

// regListAll runs `peerctl list --all --json` against configDir.
func regListAll(t testing.TB, configDir string) []regListed {
	t.Helper()
	res := runPeerctl(t, runOpts{Env: regEnv(t, configDir)}, "list", "--all", "--json")
	require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	var out []regListed
	require.NoError(t, json.Unmarshal(res.Stdout, &out), "stdout: %s", res.Stdout)
	return out
}

// regEnv is a minimal environment pointing CLAUDE_CONFIG_DIR at configDir.
func regEnv(t testing.TB, configDir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + configDir}
}

// craftedSocks is the socket folder of the crafted records: one that never
// exists, so their sockets are never on disk. (Claude Code's own folder,
// /tmp/cc-socks, keeps the sockets of sessions that ended: a crafted
// record's pid, reused from such a session, would find one there.)
const craftedSocks = "/nonexistent/peerctl-test-socks"
