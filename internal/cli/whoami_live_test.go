//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// shellMode runs one command line in a real session's "!" shell mode (which
// needs no model and no network) and waits for the file it writes its exit
// status to. The command runs as a child of the claude process with the
// environment Claude Code gives its shells. Screen words are Claude Code
// 2.1.328's: the idle prompt's footer says "? for shortcuts", shell mode's
// says "! for shell mode".
func shellMode(t *testing.T, s *livecc.Session, line, statusFile string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	waitFor := func(what string, d time.Duration) bool {
		until := time.Now().Add(d)
		for time.Now().Before(until) {
			if strings.Contains(s.Screen(), what) {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	for {
		require.True(t, time.Now().Before(deadline), "session never entered shell mode; screen:\n%s", s.Screen())
		if !waitFor("? for shortcuts", 5*time.Second) {
			s.Keys("C-u") // clear whatever was taken as text
			continue
		}
		s.Type("!")
		if waitFor("! for shell mode", 3*time.Second) {
			break
		}
		s.Keys("C-u")
	}
	s.Type(line + "; echo $? > " + statusFile)
	time.Sleep(time.Second) // let the input box take the whole line
	s.Keys("Enter")
	nextEnter := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(statusFile); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		require.True(t, time.Now().Before(deadline), "shell-mode command did not finish; screen:\n%s", s.Screen())
		if time.Now().After(nextEnter) {
			s.Keys("Enter") // an Enter that arrived while the line was still being typed is lost
			nextEnter = time.Now().Add(5 * time.Second)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLiveWhoamiAndDoctorInsideRealSession runs the peerctl binary from a
// real Claude Code session's shell mode: whoami must name that session, by
// its socket variable and, with the variable removed, by the parent-pid walk;
// doctor must see the session, the real claude's courier flags and the real
// socket folder.
func TestLiveWhoamiAndDoctorInsideRealSession(t *testing.T) {
	claude := livecc.Require(t, livecc.Version())
	bin := evBuild(t)
	s := livecc.Start(t, claude, livecc.Options{})
	out := t.TempDir()
	q := func(p string) string { return "'" + p + "'" }

	byEnv, byParents, doctor := filepath.Join(out, "env.json"), filepath.Join(out, "ppid.json"), filepath.Join(out, "doctor.json")
	// One shell-mode line: after a shell command Claude Code 2.1.328 calls the
	// model API (retrying for minutes offline), so the prompt is not free again soon.
	line := strings.Join([]string{
		fmt.Sprintf("%s whoami --json > %s 2>&1", q(bin), q(byEnv)),
		"echo $? > " + q(filepath.Join(out, "rc1")),
		fmt.Sprintf("env -u CLAUDE_CODE_MESSAGING_SOCKET %s whoami --json > %s 2>&1", q(bin), q(byParents)),
		"echo $? > " + q(filepath.Join(out, "rc2")),
		fmt.Sprintf("%s doctor --json --claude %s > %s 2>/dev/null", q(bin), q(claude), q(doctor)),
	}, "; ")
	shellMode(t, s, line, filepath.Join(out, "rc3"))

	status := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	for _, f := range []struct{ file, rc, via string }{{byEnv, "rc1", "socket-env"}, {byParents, "rc2", "ancestor"}} {
		raw, err := os.ReadFile(f.file)
		require.NoError(t, err)
		require.Equal(t, "0", status(f.rc), "whoami (%s) output: %s", f.via, raw)
		var j whoamiJSON
		require.NoError(t, json.Unmarshal(raw, &j), string(raw))
		assert.Equal(t, s.SessionID, j.SessionID, f.via)
		assert.Equal(t, s.PID, j.PID, f.via)
		assert.Equal(t, s.SocketPath, j.SocketPath, f.via)
		assert.Equal(t, f.via, j.Via)
		assert.True(t, strings.HasPrefix(j.Endpoint, "cc-peer:v1:"), j.Endpoint)
		if f.via == "ancestor" {
			t.Logf("whoami walked %v to session %s (pid %d)", j.PIDChain, j.SessionID, j.PID)
			require.NotEmpty(t, j.PIDChain)
			assert.Equal(t, s.PID, j.PIDChain[len(j.PIDChain)-1], "the walk ends at the claude process: %v", j.PIDChain)
			assert.GreaterOrEqual(t, len(j.PIDChain), 2, "peerctl is a descendant, not the session: %v", j.PIDChain)
		}
	}

	raw, err := os.ReadFile(doctor)
	require.NoError(t, err)
	assert.Equal(t, "0", status("rc3"), "doctor: %s", raw)
	var d doctorOut
	require.NoError(t, json.Unmarshal(raw, &d), string(raw))
	assert.True(t, d.OK, "problems: %v", d.Problems)
	assert.Equal(t, "ok", d.Claude.Health)
	assert.Contains(t, d.Claude.Version, livecc.Version())
	for _, f := range d.Claude.Flags {
		assert.True(t, f.Present, "real claude %s defines %s", livecc.Version(), f.Flag)
	}
	assert.True(t, d.Session.Inside)
	assert.Equal(t, "socket-env", d.Session.Via)
	assert.Equal(t, s.SessionID, d.Session.SessionID)
	assert.Contains(t, d.Session.EnvVars, "CLAUDECODE")
	assert.Contains(t, d.Session.EnvVars, "CLAUDE_CODE_MESSAGING_SOCKET")
	require.Len(t, d.SocketDirs, 1)
	assert.Equal(t, filepath.Dir(s.SocketPath), d.SocketDirs[0].Dir)
	assert.Equal(t, "ok", d.SocketDirs[0].Health, "Claude Code's own socket folder is 0700 and ours: %+v", d.SocketDirs[0])
	assert.Equal(t, 1, d.Registry.Counts["live"])
}
