package qwenregistry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
)

const tok = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func record(pid int, extra string) string {
	return fmt.Sprintf(`{"schemaVersion":1,"pid":%d,"procStart":"boot-1:42","pidNs":4026531836,"sessionId":"4981b98e-44f1-439d-abfe-247a52f5e39d","cwd":"/w/a","name":"a-09","startedAt":1796142262298,"qwenVersion":"0.24.4","kind":"tui","ipcPath":"/run/q/%d.sock","ipcToken":%q%s}`, pid, pid, tok, extra)
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
}

func TestFilePID(t *testing.T) {
	for name, want := range map[string]int{
		"4242.json": 4242, "4242-193791da.json": 4242, "1.json": 1,
		"04242.json": 0, "4242-193791DA.json": 0, "4242-19379.json": 0, "4242.json.tmp": 0,
		"4242-193791da-1.json": 0, "-1.json": 0, "x.json": 0, "99999999999.json": 0, "4242": 0,
	} {
		pid, ok := qwenregistry.FilePID(name)
		assert.Equal(t, want != 0, ok, name)
		assert.Equal(t, want, pid, name)
	}
}

func TestReadMapsRecordsAndNeverTheToken(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "4242.json", record(4242, ""))
	write(t, dir, "5000-193791da.json", record(5000, `,"kind":"headless"`)[0:0]+strings.Replace(record(5000, ""), `"kind":"tui"`, `"kind":"headless"`, 1))
	write(t, dir, "6000.json", strings.Replace(record(6000, ""), `"schemaVersion":1`, `"schemaVersion":2`, 1))
	write(t, dir, "7000.json", record(7001, ""))
	write(t, dir, "8000.json", `{"schemaVersion":1,"pid":8000,"sessionId":"s8","qwenVersion":"0.23.0"}`)
	write(t, dir, "9000.json", `{"schemaVersion":1,"pid":9000,"ipcToken":"`+tok+`",`)
	write(t, dir, "9001.json.tmp-1", record(9001, ""))
	require.NoError(t, os.Symlink(filepath.Join(dir, "4242.json"), filepath.Join(dir, "9100.json")))

	snap, err := qwenregistry.New(dir).Read(context.Background())
	require.NoError(t, err)
	byFile := map[string]domain.Record{}
	for _, r := range snap.Records {
		byFile[r.File] = r
		assert.Equal(t, qwenregistry.Kind, r.Harness)
	}
	require.Len(t, byFile, 7, "the temp file is not a record")

	r := byFile["4242.json"]
	assert.Empty(t, r.Problem)
	assert.Equal(t, 4242, r.PID)
	assert.Equal(t, "4981b98e-44f1-439d-abfe-247a52f5e39d", r.SessionID)
	assert.Equal(t, "boot-1:42", r.ProcStart)
	assert.Equal(t, "4026531836", r.PIDDomain)
	assert.Equal(t, "/run/q/4242.sock", r.SocketPath)
	assert.Equal(t, "0.24.4", r.Version)
	assert.Equal(t, "tui", r.Kind)
	assert.Equal(t, "headless", byFile["5000-193791da.json"].Kind)
	assert.Equal(t, domain.VerdictUnsupported, byFile["6000.json"].ProblemVerdict)
	assert.Contains(t, byFile["6000.json"].Problem, "schemaVersion 2")
	assert.Equal(t, domain.VerdictMisnamed, byFile["7000.json"].ProblemVerdict)
	assert.Equal(t, "tui", byFile["8000.json"].Kind, "no kind before 0.24 means tui")
	assert.Empty(t, byFile["8000.json"].SocketPath)
	assert.Equal(t, domain.VerdictMalformed, byFile["9000.json"].ProblemVerdict)
	assert.Equal(t, domain.VerdictUnreadable, byFile["9100.json"].ProblemVerdict)

	// ipcToken appears nowhere in what the reader returns.
	b, err := json.Marshal(snap)
	require.NoError(t, err)
	assert.NotContains(t, string(b), tok)
	assert.NotContains(t, fmt.Sprintf("%+v %#v", snap, snap), tok)

	// Skipped, never deleted.
	_, err = os.Stat(filepath.Join(dir, "6000.json"))
	assert.NoError(t, err)
}

// A record that could not be read or parsed has no pid of its own; it is
// shown under its file name's pid (list --all, show), not pid 0.
func TestUnparsedRecordTakesItsFileNamesPID(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "4343-0123abcd.json", "not json")
	write(t, dir, "4344.json", `{"schemaVersion":1,"pid":"x"}`)
	write(t, dir, "4345.json", `{"schemaVersion":2}`)
	require.NoError(t, os.Symlink(filepath.Join(dir, "4344.json"), filepath.Join(dir, "4346.json")))

	snap, err := qwenregistry.New(dir).Read(context.Background())
	require.NoError(t, err)
	got := map[string]int{}
	for _, r := range snap.Records {
		require.NotEmpty(t, r.Problem, r.File)
		got[r.File] = r.PID
	}
	assert.Equal(t, map[string]int{"4343-0123abcd.json": 4343, "4344.json": 4344, "4345.json": 4345,
		"4346.json": 4346}, got)
}

func TestMissingFolderIsEmpty(t *testing.T) {
	snap, err := qwenregistry.New(filepath.Join(t.TempDir(), "nope")).Read(context.Background())
	require.NoError(t, err)
	assert.True(t, snap.Missing)
	assert.Empty(t, snap.Records)
}

func TestReadTokenChecksAndRedacts(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "4242.json", record(4242, ""))
	p := filepath.Join(dir, "4242.json")
	got, err := qwenregistry.ReadToken(p, 4242, "4981b98e-44f1-439d-abfe-247a52f5e39d", "/run/q/4242.sock")
	require.NoError(t, err)
	assert.Equal(t, tok, got.Reveal())
	for _, s := range []string{fmt.Sprint(got), fmt.Sprintf("%v %+v %#v %s %q %x", got, got, got, got, got, got)} {
		assert.NotContains(t, s, tok)
		assert.NotContains(t, s, "0123456789abcdef")
	}
	b, _ := json.Marshal(struct{ T qwenregistry.Token }{got})
	assert.NotContains(t, string(b), tok)

	for name, args := range map[string][3]string{
		"session moved": {"4242", "other-session", "/run/q/4242.sock"},
		"socket moved":  {"4242", "4981b98e-44f1-439d-abfe-247a52f5e39d", "/elsewhere.sock"},
		"pid moved":     {"4243", "4981b98e-44f1-439d-abfe-247a52f5e39d", "/run/q/4242.sock"},
	} {
		pid, _ := strconv.Atoi(args[0])
		_, err := qwenregistry.ReadToken(p, pid, args[1], args[2])
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), tok, name)
	}
	write(t, dir, "bad.json", `{"schemaVersion":1,"ipcToken":"`+tok+`" "x"}`)
	_, err = qwenregistry.ReadToken(filepath.Join(dir, "bad.json"), 1, "s", "/x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), tok)
	write(t, dir, "bad2.json", `{"schemaVersion":1,"pid":"`+tok+`"}`)
	_, err = qwenregistry.ReadToken(filepath.Join(dir, "bad2.json"), 1, "s", "/x")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), tok)
}

func TestHome(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	h, err := qwenregistry.Home("/flag", getenv)
	require.NoError(t, err)
	assert.Equal(t, "/flag", h)
	env["QWEN_HOME"] = "/env/q"
	h, _ = qwenregistry.Home("", getenv)
	assert.Equal(t, "/env/q", h)
	h, _ = qwenregistry.Home("/flag", getenv)
	assert.Equal(t, "/flag", h, "the flag wins")
	delete(env, "QWEN_HOME")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	h, _ = qwenregistry.Home("", getenv)
	assert.Equal(t, filepath.Join(home, ".qwen"), h)
}

// keep is asked once, after the folder has been listed whole, with the
// record names only; what it leaves out is not read.
func TestReadMatchingAsksKeepOnceWithEveryRecordName(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "4242.json", record(4242, ""))
	write(t, dir, "5000-193791da.json", record(5000, ""))
	write(t, dir, "9001.json.tmp-1", record(9001, ""))
	var asked [][]string
	snap, err := qwenregistry.New(dir).ReadMatching(context.Background(), func(names []string) []string {
		asked = append(asked, slices.Clone(names))
		return slices.DeleteFunc(names, func(n string) bool { return n == "4242.json" })
	})
	require.NoError(t, err)
	require.Len(t, asked, 1)
	assert.ElementsMatch(t, []string{"4242.json", "5000-193791da.json"}, asked[0])
	require.Len(t, snap.Records, 1)
	assert.Equal(t, 5000, snap.Records[0].PID)
}
