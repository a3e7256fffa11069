package cli

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testproc"
)

func TestWhoamiInProcess(t *testing.T) {
	socks := evSocketDir(t)
	self := os.Getpid()
	other := testproc.Sleeper(t)
	mine := evLiveRecord(t, self, "11111111-aaaa-4aaa-8aaa-000000000001", "mine", "/src/mine", filepath.Join(socks, "m.sock"))
	theirs := evLiveRecord(t, other, "22222222-bbbb-4bbb-8bbb-000000000002", "theirs", "/src/theirs", filepath.Join(socks, "t.sock"))
	stale := evLiveRecord(t, self, "33333333-cccc-4ccc-8ccc-000000000003", "gone", "/src/gone", filepath.Join(socks, "g.sock"))
	stale.PID = testproc.DeadPID(t)
	both := evConfigDir(t, mine, theirs)
	onlyTheirs := evConfigDir(t, theirs, stale)

	tests := []struct {
		name     string
		cfg      string
		env      map[string]string
		wantCode int
		wantID   string
		wantVia  string
		wantErr  []string
	}{
		{"socket variable names a live record", both, map[string]string{"CLAUDE_CODE_MESSAGING_SOCKET": theirs.SocketPath}, wire.ExitOK, theirs.SessionID, "socket-env", nil},
		{"socket variable, unclean path", both, map[string]string{"CLAUDE_CODE_MESSAGING_SOCKET": socks + "//./t.sock"}, wire.ExitOK, theirs.SessionID, "socket-env", nil},
		{"no variable: our own pid's record", both, nil, wire.ExitOK, mine.SessionID, "ancestor", nil},
		{"stale socket variable falls back to parents", both, map[string]string{"CLAUDE_CODE_MESSAGING_SOCKET": stale.SocketPath}, wire.ExitOK, mine.SessionID, "ancestor", nil},
		{"outside", onlyTheirs, nil, wire.ExitNotLive, "", "", []string{"not_live: not inside a session"}},
		{"outside, stale socket variable", onlyTheirs, map[string]string{"CLAUDE_CODE_MESSAGING_SOCKET": stale.SocketPath}, wire.ExitNotLive, "", "",
			[]string{"not inside a session", "CLAUDE_CODE_MESSAGING_SOCKET=" + stale.SocketPath + " matches no live record"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evRun(t, tt.env, nil, "whoami", "--json", "--config-dir", tt.cfg)
			require.Equal(t, tt.wantCode, r.code, "stderr: %s", r.stderr)
			if tt.wantCode != wire.ExitOK {
				for _, w := range tt.wantErr {
					assert.Contains(t, r.stderr, w)
				}
				var ref wire.RefusalDoc
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &ref), r.stdout)
				assert.Equal(t, "not_live", ref.Refusal.Reason)
				assert.Equal(t, wire.ExitNotLive, ref.Refusal.ExitCode)
				return
			}
			var j whoamiJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &j), r.stdout)
			assert.Equal(t, tt.wantID, j.SessionID)
			assert.Equal(t, tt.wantVia, j.Via)
			assert.Equal(t, "live", j.Verdict)
			assert.True(t, strings.HasPrefix(j.Endpoint, "cc-peer:v1:"), j.Endpoint)
		})
	}
}

func TestWhoamiText(t *testing.T) {
	socks := evSocketDir(t)
	rec := evLiveRecord(t, os.Getpid(), "11111111-aaaa-4aaa-8aaa-000000000001", "mine", "/src/mine", filepath.Join(socks, "m.sock"))
	r := evRun(t, nil, nil, "whoami", "--config-dir", evConfigDir(t, rec))
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "session:  "+rec.SessionID+"\n")
	assert.Contains(t, r.stdout, "found by: ancestor\n")

	r = evRun(t, nil, nil, "whoami", "--config-dir", evConfigDir(t))
	assert.Equal(t, wire.ExitNotLive, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "not inside a session")
}

// TestWhoamiBinaryParentChain runs the built binary as a descendant of a
// process that has a live record, and proves whoami walks real parent pids.
func TestWhoamiBinaryParentChain(t *testing.T) {
	bin := evBuild(t)
	socks := evSocketDir(t)

	t.Run("grandparent: this test process has the record", func(t *testing.T) {
		rec := evLiveRecord(t, os.Getpid(), "11111111-aaaa-4aaa-8aaa-000000000001", "test-proc", "/src/t", filepath.Join(socks, "t.sock"))
		cfg := evConfigDir(t, rec)
		// sh stays the parent: it has work left after peerctl exits.
		cmd := exec.Command("sh", "-c", `"$0" whoami --json --config-dir "$1"; rc=$?; echo "shell=$$" >&2; exit $rc`, bin, cfg)
		cmd.Env = evCleanEnv()
		out, err := cmd.Output()
		require.NoError(t, err, "stderr: %s", exitStderr(err))
		var j whoamiJSON
		require.NoError(t, json.Unmarshal(out, &j), string(out))
		assert.Equal(t, rec.SessionID, j.SessionID)
		assert.Equal(t, "ancestor", j.Via)
		require.Len(t, j.PIDChain, 3, "peerctl, sh, this test: %v", j.PIDChain)
		assert.Equal(t, cmd.Process.Pid, j.PIDChain[1])
		assert.Equal(t, os.Getpid(), j.PIDChain[2])
	})

	t.Run("parent: a helper process has the record", func(t *testing.T) {
		// The helper waits on stdin until its record is written, then runs peerctl.
		helper := exec.Command("sh", "-c", `read go; "$0" whoami --json --config-dir "$1"; rc=$?; exit $rc`, bin)
		cfgHolder := t.TempDir()
		helper.Args = append(helper.Args, filepath.Join(cfgHolder, "config"))
		helper.Env = evCleanEnv()
		stdin, err := helper.StdinPipe()
		require.NoError(t, err)
		var out strings.Builder
		helper.Stdout = &out
		require.NoError(t, helper.Start())
		done := make(chan error, 1)
		go func() { done <- helper.Wait() }()
		t.Cleanup(func() { _ = helper.Process.Kill() })

		rec := evLiveRecord(t, helper.Process.Pid, "22222222-bbbb-4bbb-8bbb-000000000002", "helper", "/src/h", filepath.Join(socks, "h.sock"))
		cfg := evConfigDir(t, rec)
		require.NoError(t, os.Rename(cfg, filepath.Join(cfgHolder, "config")))
		_, err = io.WriteString(stdin, "go\n")
		require.NoError(t, err)
		require.NoError(t, stdin.Close())
		select {
		case err := <-done:
			require.NoError(t, err, "stdout: %s", out.String())
		case <-time.After(30 * time.Second):
			t.Fatal("helper did not finish within 30 s")
		}
		var j whoamiJSON
		require.NoError(t, json.Unmarshal([]byte(out.String()), &j), out.String())
		assert.Equal(t, rec.SessionID, j.SessionID)
		assert.Equal(t, helper.Process.Pid, j.PID)
		require.Len(t, j.PIDChain, 2, "peerctl, helper: %v", j.PIDChain)
		assert.Equal(t, helper.Process.Pid, j.PIDChain[1])
	})

	t.Run("outside: no ancestor has a record", func(t *testing.T) {
		cfg := evConfigDir(t)
		cmd := exec.Command(bin, "whoami", "--config-dir", cfg)
		cmd.Env = evCleanEnv()
		out, err := cmd.Output()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, wire.ExitNotLive, ee.ExitCode())
		assert.Empty(t, out)
		assert.Contains(t, string(ee.Stderr), "not inside a session")
		assert.Contains(t, string(ee.Stderr), strconv.Itoa(os.Getpid()), "the pids walked are listed")
	})
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
