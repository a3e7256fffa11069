//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testproc"
)

// TestListAllExplainsEveryRecord: every crafted record appears once in
// `list --all --json` with the expected verdict, reason and file; key, dot
// and temp files do not appear; `list --json` holds exactly the live ones.
// The same beside 1,000 stale records with their key files, a folder large
// enough that `list` looks up the files of running processes instead of
// listing it (ports.PIDRegistry): no live record is dropped, --all is
// unchanged.
func TestListAllExplainsEveryRecord(t *testing.T) {
	t.Run("crafted", func(t *testing.T) { testListAllExplainsEveryRecord(t, 0) })
	t.Run("beside 1,000 stale records", func(t *testing.T) { testListAllExplainsEveryRecord(t, 1000) })
}

func testListAllExplainsEveryRecord(t *testing.T, stale int) {
	reg := craftRegistry(t)
	require.GreaterOrEqual(t, len(reg.Cases), 12)
	addStale(t, reg, stale)
	got := regListAll(t, reg.ConfigDir)
	byFile := map[string]regListed{}
	for _, l := range got {
		_, dup := byFile[l.File]
		require.False(t, dup, "file %s listed twice", l.File)
		byFile[l.File] = l
	}
	assert.Len(t, got, len(reg.Cases))
	for _, c := range reg.Cases {
		t.Run(c.Label, func(t *testing.T) {
			l, ok := byFile[c.File]
			require.True(t, ok, "%s is not listed", c.File)
			assert.Equal(t, c.Verdict, l.Verdict, "reason: %s", l.Reason)
			assert.Contains(t, l.Reason, c.Reason)
			// A misnamed <pid>.json holds another pid: c.PID is the file's.
			if c.Verdict != "unreadable" && c.Verdict != "malformed" && (c.Verdict != "misnamed" || c.File != strconv.Itoa(c.PID)+".json") {
				assert.Equal(t, c.PID, l.PID)
				assert.Equal(t, c.SessionID, l.SessionID)
			}
			if c.Verdict != "live" {
				assert.False(t, l.Addressable)
				assert.Empty(t, l.Endpoint)
			}
		})
	}
	for _, name := range reg.Ignored {
		_, listed := byFile[name]
		assert.False(t, listed, "%s must be ignored", name)
	}

	res := runPeerctl(t, runOpts{Env: regEnv(t, reg.ConfigDir)}, "list", "--json")
	require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	var live []regListed
	require.NoError(t, json.Unmarshal(res.Stdout, &live))
	var wantFiles, gotFiles []string
	for _, c := range reg.Cases {
		if c.Verdict == "live" {
			wantFiles = append(wantFiles, c.File)
		}
	}
	for _, l := range live {
		gotFiles = append(gotFiles, l.File)
		assert.Equal(t, "live", l.Verdict)
	}
	assert.ElementsMatch(t, wantFiles, gotFiles)
}

func TestListAllTable(t *testing.T) {
	reg := craftRegistry(t)
	res := runPeerctl(t, runOpts{Env: regEnv(t, reg.ConfigDir)}, "list", "--all")
	require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	lines := strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n")
	require.Len(t, lines, len(reg.Cases)+1)
	assert.Regexp(t, `^VERDICT\s+HARNESS\s+NAME\s+SESSION\s+PID\s+FILE\s+REASON$`, lines[0])
	for _, c := range reg.Cases {
		found := false
		for _, line := range lines[1:] {
			if strings.HasPrefix(line, c.Verdict+" ") && strings.Contains(line, " "+c.File+" ") {
				found = true
			}
		}
		assert.True(t, found, "no %s row for %s (%s) in:\n%s", c.Verdict, c.File, c.Label, res.Stdout)
	}
	assert.Contains(t, string(res.Stdout), "not addressable: record has no name", "a live record says why it is not addressable")
}

func TestFolderEdgeCases(t *testing.T) {
	t.Run("missing folder: empty list and a note", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "never-created")
		for _, args := range [][]string{{"list", "--json"}, {"list", "--all", "--json"}} {
			res := runPeerctl(t, runOpts{Env: regEnv(t, cfg)}, args...)
			assert.Equal(t, 0, res.Code)
			assert.JSONEq(t, "[]", string(res.Stdout))
			assert.Contains(t, string(res.Stderr), "note: registry folder "+filepath.Join(cfg, "sessions")+" does not exist")
		}
	})
	// A registry that cannot be read is a warning naming it and exit 1; what
	// the other harnesses' registries hold is printed (here: nothing), so an
	// empty list on stdout is never the whole answer (docs/OUTPUT.md).
	t.Run("a file in place of the folder: exit 1 and a warning", func(t *testing.T) {
		cfg := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(cfg, "sessions"), []byte("x"), 0o600))
		res := runPeerctl(t, runOpts{Env: regEnv(t, cfg)}, "list", "--json")
		assert.Equal(t, 1, res.Code)
		assert.JSONEq(t, "[]", string(res.Stdout), "the other harnesses' sessions (none)")
		assert.Contains(t, string(res.Stderr), "warning: claude-code: registry not read")
		assert.Contains(t, string(res.Stderr), "read registry "+filepath.Join(cfg, "sessions")+": ")
		assert.Contains(t, string(res.Stderr), "not a directory")
	})
	t.Run("trailing slash", func(t *testing.T) {
		reg := craftRegistry(t)
		res := runPeerctl(t, runOpts{Env: regEnv(t, reg.ConfigDir+"/")}, "list", "--all", "--json")
		require.Equal(t, 0, res.Code)
		var got []regListed
		require.NoError(t, json.Unmarshal(res.Stdout, &got))
		assert.Len(t, got, len(reg.Cases))
		assert.Empty(t, res.Stderr)
	})
	t.Run("empty CLAUDE_CONFIG_DIR means ~/.claude", func(t *testing.T) {
		reg := craftRegistry(t)
		home := t.TempDir()
		require.NoError(t, os.Symlink(reg.ConfigDir, filepath.Join(home, ".claude")))
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR="}
		res := runPeerctl(t, runOpts{Env: env}, "list", "--all", "--json")
		require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
		var got []regListed
		require.NoError(t, json.Unmarshal(res.Stdout, &got))
		assert.Len(t, got, len(reg.Cases))
	})
	t.Run("literal ~ warns", func(t *testing.T) {
		res := runPeerctl(t, runOpts{Env: regEnv(t, "~/cfg")}, "list")
		assert.Equal(t, 0, res.Code)
		assert.Contains(t, string(res.Stderr), `warning: CLAUDE_CONFIG_DIR "~/cfg" starts with a literal '~'`)
	})
	t.Run("unreadable folder: exit 1 and a warning", func(t *testing.T) {
		regUnreadableFolder(t)
	})
}

// regUnreadableFolder runs peerctl against a mode-0700 sessions folder it
// may not read. As root (which reads anything) the binary runs as the
// unprivileged user 65534 instead, so the kernel really says EACCES.
func regUnreadableFolder(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	cfg := filepath.Join(base, "cfg")
	sessions := filepath.Join(cfg, "sessions")
	require.NoError(t, os.MkdirAll(sessions, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sessions, "1.json"), []byte(`{"pid":1,"kind":"interactive"}`), 0o644))
	require.NoError(t, os.Chmod(sessions, 0o700))

	// A copy of the binary every user may run.
	data, err := os.ReadFile(peerctlBin(t))
	require.NoError(t, err)
	bin := filepath.Join(base, "peerctl")
	require.NoError(t, os.WriteFile(bin, data, 0o755))

	cmd := exec.Command(bin, "list", "--json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + base, "CLAUDE_CONFIG_DIR=" + cfg}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else {
		require.NoError(t, os.Chmod(sessions, 0))
		t.Cleanup(func() { _ = os.Chmod(sessions, 0o700) })
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stdout: %s stderr: %s", stdout.String(), stderr.String())
	assert.Equal(t, 1, ee.ExitCode())
	assert.JSONEq(t, "[]", stdout.String(), "the other harnesses' sessions (none)")
	assert.Contains(t, stderr.String(), "warning: claude-code: registry not read")
	assert.Contains(t, stderr.String(), "read registry "+sessions+": ")
	assert.Contains(t, stderr.String(), "permission denied")
}

func TestShowAndAddressing(t *testing.T) {
	reg := craftRegistry(t)
	env := regEnv(t, reg.ConfigDir)
	live := reg.Cases[0] // procStart right, as a string
	require.Equal(t, "live", live.Verdict)
	name := "peer-" + strconv.Itoa(live.PID)
	endpoint := "cc-peer:v1:" + strconv.Itoa(live.PID) + ":" + name + ":" + craftedSocks + "/" + strconv.Itoa(live.PID) + ".sock"

	type showOut struct {
		SessionID    string `json:"sessionId"`
		PID          int    `json:"pid"`
		Verdict      string `json:"verdict"`
		Reason       string `json:"reason"`
		File         string `json:"file"`
		Endpoint     string `json:"endpoint"`
		ProcStart    string `json:"procStart"`
		SocketOnDisk string `json:"socketOnDisk"`
		Transcript   string `json:"transcript"`
	}
	for _, addr := range []string{live.SessionID, live.SessionID[:8], name, endpoint} {
		t.Run("by "+addr, func(t *testing.T) {
			res := runPeerctl(t, runOpts{Env: env}, "show", "--json", addr)
			require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
			var got showOut
			require.NoError(t, json.Unmarshal(res.Stdout, &got))
			assert.Equal(t, live.PID, got.PID)
			assert.Equal(t, live.SessionID, got.SessionID)
			assert.Equal(t, "live", got.Verdict)
			assert.Empty(t, got.Endpoint, "its socket is absent: not addressable, as list says, so no endpoint")
			assert.Equal(t, regProcStart(t, live.PID), got.ProcStart)
			assert.Equal(t, "no", got.SocketOnDisk, "the crafted socket path does not exist")
			assert.Equal(t, filepath.Join(reg.ConfigDir, "projects", "-home-dev-src-shop", live.SessionID+".jsonl"), got.Transcript)
		})
	}
	t.Run("table", func(t *testing.T) {
		res := runPeerctl(t, runOpts{Env: env}, "show", name)
		require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
		for _, want := range []string{"verdict:", "live", "addressable:", "why not:", "does not exist", "socket on disk:", "absent", "transcript:", "(absent)", "file:", filepath.Join(reg.Sessions, live.File)} {
			assert.Contains(t, string(res.Stdout), want)
		}
	})
	t.Run("a stale record is shown with its verdict", func(t *testing.T) {
		var stale regCase
		for _, c := range reg.Cases {
			if c.Verdict == "stale" {
				stale = c
			}
		}
		res := runPeerctl(t, runOpts{Env: env}, "show", "--json", stale.SessionID)
		require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
		var got showOut
		require.NoError(t, json.Unmarshal(res.Stdout, &got))
		assert.Equal(t, "stale", got.Verdict)
		assert.Contains(t, got.Reason, "is not running")
	})
	t.Run("an endpoint whose name moved refuses", func(t *testing.T) {
		moved := strings.Replace(endpoint, name, "old-name", 1)
		res := runPeerctl(t, runOpts{Env: env}, "show", moved)
		assert.Equal(t, 4, res.Code)
		assert.Contains(t, string(res.Stderr), "identity_mismatch")
	})
	t.Run("nothing matches", func(t *testing.T) {
		res := runPeerctl(t, runOpts{Env: env}, "show", "no-such-session")
		assert.Equal(t, 3, res.Code)
		assert.Contains(t, string(res.Stderr), "peerctl: not_live: ")
	})
}

// TestAmbiguousAddressListsCandidates: two live sessions sharing a name
// refuse an ambiguous address with identity_mismatch and every candidate's
// id, name and pid. show only reads: a full id still shows its session,
// with a warning that the name is shared.
func TestAmbiguousAddressListsCandidates(t *testing.T) {
	cfg := t.TempDir()
	sessions := filepath.Join(cfg, "sessions")
	require.NoError(t, os.Mkdir(sessions, 0o700))
	ids := []string{"aaaaaa01-0000-4000-8000-000000000001", "aaaaaa02-0000-4000-8000-000000000002"}
	var pids []int
	for _, id := range ids {
		pid := testproc.Sleeper(t)
		pids = append(pids, pid)
		rec := `{"pid":` + strconv.Itoa(pid) + `,"sessionId":"` + id + `","procStart":"` + regProcStart(t, pid) +
			`","kind":"interactive","name":"twin","messagingSocketPath":"/tmp/cc-socks/` + strconv.Itoa(pid) + `.sock"}`
		require.NoError(t, os.WriteFile(filepath.Join(sessions, strconv.Itoa(pid)+".json"), []byte(rec), 0o600))
	}
	t.Run("full id", func(t *testing.T) {
		res := runPeerctl(t, runOpts{Env: regEnv(t, cfg)}, "show", "--json", ids[0])
		require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
		var out struct {
			SessionID string   `json:"sessionId"`
			Warnings  []string `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal(res.Stdout, &out), "stdout: %s", res.Stdout)
		assert.Equal(t, ids[0], out.SessionID)
		require.Len(t, out.Warnings, 1)
		assert.Contains(t, out.Warnings[0], `name "twin" is carried by 2 live sessions`)
	})
	for _, addr := range []string{"twin", "aaaaaa"} {
		t.Run(addr, func(t *testing.T) {
			res := runPeerctl(t, runOpts{Env: regEnv(t, cfg)}, "show", "--json", addr)
			assert.Equal(t, 4, res.Code)
			assert.Contains(t, string(res.Stderr), "peerctl: identity_mismatch: ")
			for i, id := range ids {
				assert.Contains(t, string(res.Stderr), "candidate: "+id[:8]+`  "twin"  claude-code  pid `+strconv.Itoa(pids[i]))
			}
			var out struct {
				Refusal struct {
					Reason     string `json:"reason"`
					Candidates []struct {
						SessionID string `json:"sessionId"`
						Name      string `json:"name"`
						Harness   string `json:"harness"`
						PID       int    `json:"pid"`
					} `json:"candidates"`
				} `json:"refusal"`
			}
			require.NoError(t, json.Unmarshal(res.Stdout, &out), "stdout: %s", res.Stdout)
			assert.Equal(t, "identity_mismatch", out.Refusal.Reason)
			require.Len(t, out.Refusal.Candidates, 2)
			for _, c := range out.Refusal.Candidates {
				assert.Contains(t, ids, c.SessionID)
				assert.Equal(t, "twin", c.Name)
				assert.Equal(t, "claude-code", c.Harness)
				assert.Contains(t, pids, c.PID)
			}
		})
	}
}

// TestRegistryRefusalNamesOnlyHarnessesHere: on a machine with Claude Code
// alone (no Qwen Code, Codex or opencode installed, none with state), a
// not_live refusal names Claude Code's sessions and folder only; a harness
// that is installed is named again; doctor lists every harness all the same
// (issue 44).
func TestRegistryRefusalNamesOnlyHarnessesHere(t *testing.T) {
	home, bin := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude", "sessions"), 0o700))
	env := []string{"PATH=" + bin, "HOME=" + home}

	res := runPeerctl(t, runOpts{Env: env}, "show", "no-such-session")
	assert.Equal(t, 3, res.Code, "stderr: %s", res.Stderr)
	assert.Contains(t, string(res.Stderr), "peerctl: not_live: ")
	assert.Contains(t, string(res.Stderr), "searched the claude-code sessions")
	for _, other := range []string{"qwen", "codex", "opencode"} {
		assert.NotContains(t, strings.ToLower(string(res.Stderr)), other, "a harness that is not here")
	}

	require.NoError(t, os.WriteFile(filepath.Join(bin, "codex"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	res = runPeerctl(t, runOpts{Env: env}, "show", "no-such-session")
	assert.Equal(t, 3, res.Code, "stderr: %s", res.Stderr)
	assert.Contains(t, string(res.Stderr), "searched the claude-code and codex sessions")
	assert.Contains(t, string(res.Stderr), "the codex registry folder "+filepath.Join(home, ".codex")+" does not exist")
	assert.NotContains(t, string(res.Stderr), "qwen")

	doc := runPeerctl(t, runOpts{Env: env}, "doctor", "--json")
	var rows map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc.Stdout, &rows), "stdout: %s stderr: %s", doc.Stdout, doc.Stderr)
	for _, k := range []string{"claude", "qwen", "codex", "opencode"} {
		assert.Contains(t, rows, k, "doctor still lists every harness")
	}
}

// addStale writes n stale records into reg, Claude Code's shape, each
// beside its key file: pids counted down from the top of the pid range
// that no process has now.
func addStale(t *testing.T, reg *regRegistry, n int) {
	t.Helper()
	pid := 1 << 22
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if m, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pid = m
		}
	}
	for ; n > 0 && pid > 300; pid-- {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			continue
		}
		n--
		id := fmt.Sprintf("%08x-d23c-4223-a45d-b9ec61fda652", pid)
		body := fmt.Sprintf(`{"pid":%d,"sessionId":%q,"cwd":"/home/dev/src/shop","startedAt":1796027521308,"procStart":"%d","kind":"interactive","messagingSocketPath":"%s/%d.sock","name":"stale-%d"}`, pid, id, 1000+pid, craftedSocks, pid, pid)
		file := strconv.Itoa(pid) + ".json"
		require.NoError(t, os.WriteFile(filepath.Join(reg.Sessions, file), []byte(body), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(reg.Sessions, fmt.Sprintf("%d.%064x.key", pid, pid)), []byte(`{"peerToken":"not-a-secret"}`), 0o600))
		reg.Cases = append(reg.Cases, regCase{Label: "stale " + file, PID: pid, File: file, SessionID: id, Verdict: "stale", Reason: "is not running"})
	}
	require.Zero(t, n, "no free pids for stale records")
}
