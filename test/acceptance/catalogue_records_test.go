package acceptance

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/test/socktest"
)

// TestCatalogueRecords feeds the built binary one hostile registry entry per
// row and checks the verdict `list --all --json` gives it, that the table
// form prints no raw control characters, and that nothing in the registry
// folder was modified. Live records use this test process's own pid and
// real procStart (or pid 1 for a foreign one).
func TestCatalogueRecords(t *testing.T) {
	self := os.Getpid()
	selfFile := catFile(self)
	// The live records' socket is there: one whose socket is absent is
	// listed as not addressable (TestListSaysUnreachable... in internal/cli).
	selfSock := filepath.Join(t.TempDir(), strconv.Itoa(self)+".sock")
	socktest.Listen(t, selfSock, false)
	mk := func(t *testing.T, mut func(map[string]any)) map[string]any {
		rec := catRecord(t, self, "peer-"+strconv.Itoa(self), selfSock)
		if mut != nil {
			mut(rec)
		}
		return rec
	}
	marshal := func(t *testing.T, rec map[string]any) []byte {
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		return b
	}
	rows := []struct {
		desc string
		// setup fills the sessions folder and returns the file to check.
		setup   func(t *testing.T, sessions string) string
		verdict string
		check   func(t *testing.T, e catListEntry)
	}{
		{desc: "truncated JSON", verdict: "malformed", setup: func(t *testing.T, s string) string {
			b := marshal(t, mk(t, nil))
			catWrite(t, s, selfFile, b[:len(b)/2])
			return selfFile
		}},
		{desc: "UTF-8 byte order mark", verdict: "live", setup: func(t *testing.T, s string) string {
			catWrite(t, s, selfFile, append([]byte{0xEF, 0xBB, 0xBF}, marshal(t, mk(t, nil))...))
			return selfFile
		}},
		{desc: "trailing garbage", verdict: "malformed", setup: func(t *testing.T, s string) string {
			catWrite(t, s, selfFile, append(marshal(t, mk(t, nil)), "\n{\"pid\":1}"...))
			return selfFile
		}, check: func(t *testing.T, e catListEntry) { assert.Contains(t, e.Reason, "trailing") }},
		{desc: "pid does not match the file name", verdict: "misnamed", setup: func(t *testing.T, s string) string {
			f := strconv.Itoa(self) + "b.json"
			catWriteJSON(t, s, f, mk(t, nil))
			return f
		}},
		{desc: "symlink to a system file", verdict: "unreadable", setup: func(t *testing.T, s string) string {
			require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(s, selfFile)))
			return selfFile
		}, check: func(t *testing.T, e catListEntry) { assert.Contains(t, e.Reason, "symlink") }},
		{desc: "symlink to a valid live record is still not followed", verdict: "unreadable", setup: func(t *testing.T, s string) string {
			target := filepath.Join(t.TempDir(), selfFile)
			require.NoError(t, os.WriteFile(target, marshal(t, mk(t, nil)), 0o600))
			require.NoError(t, os.Symlink(target, filepath.Join(s, selfFile)))
			return selfFile
		}},
		{desc: "a folder named x.json", verdict: "unreadable", setup: func(t *testing.T, s string) string {
			require.NoError(t, os.Mkdir(filepath.Join(s, "x.json"), 0o700))
			return "x.json"
		}, check: func(t *testing.T, e catListEntry) { assert.Contains(t, e.Reason, "not a regular file") }},
		{desc: "a 50 MB file (sparse)", verdict: "malformed", setup: func(t *testing.T, s string) string {
			f, err := os.Create(filepath.Join(s, selfFile))
			require.NoError(t, err)
			_, err = f.Write(marshal(t, mk(t, nil)))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(50<<20))
			require.NoError(t, f.Close())
			return selfFile
		}, check: func(t *testing.T, e catListEntry) { assert.Contains(t, e.Reason, "cap") }},
		{desc: "procStart as a string", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, nil))
			return selfFile
		}},
		{desc: "procStart as a number", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["procStart"] = json.Number(r["procStart"].(string)) }))
			return selfFile
		}},
		{desc: "procStart of another process start", verdict: "reused", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["procStart"] = "1" }))
			return selfFile
		}},
		{desc: "startedAt in seconds", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["startedAt"] = r["startedAt"].(int64) / 1000 }))
			return selfFile
		}, check: func(t *testing.T, e catListEntry) {
			assert.Empty(t, e.StartedAt, "a seconds value must not become a date")
			require.Len(t, e.Warnings, 1)
			assert.Contains(t, e.Warnings[0], "startedAt")
		}},
		{desc: "startedAt in microseconds (year 58000 as ms)", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["startedAt"] = r["startedAt"].(int64) * 1000 }))
			return selfFile
		}, check: func(t *testing.T, e catListEntry) {
			assert.Empty(t, e.StartedAt)
			require.Len(t, e.Warnings, 1)
		}},
		{desc: "pidDomain of another pid namespace", verdict: "foreign", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) {
				d := r["pidDomain"].(string)
				r["pidDomain"] = d[:strings.LastIndex(d, ":pid:")] + ":pid:[1]"
			}))
			return selfFile
		}},
		{desc: "pid 1 with a foreign domain", verdict: "foreign", setup: func(t *testing.T, s string) string {
			rec := catRecord(t, 1, "init-peer", "/tmp/cc-socks/1.sock")
			rec["pidDomain"] = "linux:00000000000000000000000000000000:pid:[4026531836]"
			catWriteJSON(t, s, "1.json", rec)
			return "1.json"
		}},
		{desc: "empty socket path", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["messagingSocketPath"] = "" }))
			return selfFile
		}, check: notAddressable("messagingSocketPath")},
		{desc: "null socket path", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["messagingSocketPath"] = nil }))
			return selfFile
		}, check: notAddressable("messagingSocketPath")},
		{desc: "Windows pipe as socket path", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["messagingSocketPath"] = `\\.\pipe\x` }))
			return selfFile
		}, check: notAddressable("absolute")},
		{desc: "relative socket path", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["messagingSocketPath"] = "cc-socks/1.sock" }))
			return selfFile
		}, check: notAddressable("absolute")},
		{desc: "no pid", verdict: "malformed", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { delete(r, "pid") }))
			return selfFile
		}},
		// Claude Code 2.1.328 lists such a record too (measured), so peerctl agrees.
		{desc: "pid as a string", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["pid"] = strconv.Itoa(self) }))
			return selfFile
		}},
		{desc: "not JSON at all (a copied key file's content)", verdict: "malformed", setup: func(t *testing.T, s string) string {
			catWrite(t, s, selfFile, []byte("peerToken=0123456789abcdef\n"))
			return selfFile
		}},
		{desc: "control characters in the file name", verdict: "misnamed", setup: func(t *testing.T, s string) string {
			f := "\x1b[2J\x1b[31mred\r\x9b.json"
			catWriteJSON(t, s, f, mk(t, nil))
			return f
		}},
		{desc: "control characters in the name", verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["name"] = "evil\x1b[2J\r\nlive  fake-row\x07\u009b" }))
			return selfFile
		}, check: roundTripName("evil\x1b[2J\r\nlive  fake-row\x07\u009b")},
	}
	for _, name := range []string{"build:main", "50% done", "%3A%25", "/etc/passwd", "名前-ビルド", "a:b%c:/d"} {
		rows = append(rows, struct {
			desc    string
			setup   func(t *testing.T, sessions string) string
			verdict string
			check   func(t *testing.T, e catListEntry)
		}{desc: "name " + name, verdict: "live", setup: func(t *testing.T, s string) string {
			catWriteJSON(t, s, selfFile, mk(t, func(r map[string]any) { r["name"] = name }))
			return selfFile
		}, check: roundTripName(name)})
	}
	for _, row := range rows {
		t.Run(row.desc, func(t *testing.T) {
			config, sessions := catRegistry(t)
			file := row.setup(t, sessions)
			e := catByFile(t, catList(t, config, sessions, true), file)
			assert.Equal(t, row.verdict, e.Verdict, "reason: %s", e.Reason)
			if row.check != nil {
				row.check(t, e)
			}
			live := catList(t, config, sessions, false)
			if row.verdict == "live" {
				assert.Len(t, live, 1)
			} else {
				assert.Empty(t, live, "a %s record must not be listed as live", row.verdict)
			}
			table := catRun(t, sessions, runOpts{}, "--config-dir", config, "list", "--all")
			require.Equal(t, 0, table.Code, "stderr: %s", table.Stderr)
			catNoControl(t, table.Stdout)
			assert.Equal(t, 2, bytes.Count(table.Stdout, []byte("\n")), "header and exactly one row:\n%s", table.Stdout)
			if row.verdict == "live" {
				plain := catRun(t, sessions, runOpts{}, "--config-dir", config, "list")
				require.Equal(t, 0, plain.Code, "stderr: %s", plain.Stderr)
				catNoControl(t, plain.Stdout)
				assert.Equal(t, 2, bytes.Count(plain.Stdout, []byte("\n")), "header and exactly one row:\n%s", plain.Stdout)
			}
		})
	}
}

func notAddressable(why string) func(t *testing.T, e catListEntry) {
	return func(t *testing.T, e catListEntry) {
		assert.False(t, e.Addressable)
		assert.Empty(t, e.Endpoint)
		assert.Contains(t, e.Unaddressable, why)
	}
}

// roundTripName checks the name comes out exactly, and its endpoint parses
// back to the same name and socket.
func roundTripName(name string) func(t *testing.T, e catListEntry) {
	return func(t *testing.T, e catListEntry) {
		assert.Equal(t, name, e.Name)
		require.True(t, e.Addressable, "unaddressable: %s", e.Unaddressable)
		ep, err := domain.ParseEndpoint(e.Endpoint)
		require.NoError(t, err)
		assert.Equal(t, name, ep.Name())
		assert.Equal(t, e.SocketPath, ep.Socket())
		assert.Equal(t, e.PID, ep.PID())
	}
}
