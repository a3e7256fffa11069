//go:build unix

package acceptance

// One service per state folder, and what it says about itself: its
// socket is the folder's, serve status and serve stop, the on-demand
// start's notice, --idle-exit, the unit's environment and the log's times.

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statusJSON is serve status --json (docs/OUTPUT.md).
type statusJSON struct {
	Running          bool           `json:"running"`
	PID              int            `json:"pid"`
	Version          string         `json:"version"`
	StateDir         string         `json:"stateDir"`
	Socket           string         `json:"socket"`
	Outbox           string         `json:"outbox"`
	OutboxError      string         `json:"outboxError"`
	StartedAt        string         `json:"startedAt"`
	UptimeSeconds    int64          `json:"uptimeSeconds"`
	IdleExitSeconds  int64          `json:"idleExitSeconds"`
	RetentionSeconds int64          `json:"retentionSeconds"`
	Messages         map[string]int `json:"messages"`
	Warm             struct {
		Sets    int `json:"sets"`
		InUse   int `json:"inUse"`
		Started int `json:"started"`
	} `json:"warm"`
}

func (w serveWorld) status(t *testing.T) (statusJSON, result) {
	t.Helper()
	r := w.peerctl(t, nil, "serve", "status", "--json")
	var st statusJSON
	require.NoError(t, json.Unmarshal(r.Stdout, &st), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	return st, r
}

// A service started for another state folder takes no socket from the
// running one: both run, and each folder's commands reach their own
// (before, the second took the socket: the first folder's durable sends
// were stored in the second's outbox, and its service was unreachable).
func TestServeTwoStateFoldersEachReachItsOwn(t *testing.T) {
	a := newServeWorld(t)
	b := newServeWorld(t)
	b.run = a.run // one runtime folder, two state folders
	a.startServe(t)
	b.startServe(t)
	var pa, pb int
	eventually(t, 30*time.Second, "both services to hold their locks", func() bool {
		pa, pb = a.servePID(t), b.servePID(t)
		return pa != 0 && pb != 0
	})
	require.NotEqual(t, pa, pb)
	assert.NotEqual(t, a.socket(), b.socket())

	for _, w := range []serveWorld{a, b} {
		r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "reviewer", "for "+w.state)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.NotContains(t, string(r.Stderr), "started peerctl serve", "the folder's own service was running")
	}
	for _, w := range []serveWorld{a, b} {
		got := w.outbox(t)
		require.Len(t, got, 1, "each folder's outbox holds its own message")
		assert.Equal(t, "for "+w.state, got[0].Text)
	}
	assert.Equal(t, pa, a.servePID(t), "the first service still runs")
	st, r := a.status(t)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, pa, st.PID)
	st, _ = b.status(t)
	assert.Equal(t, pb, st.PID)

	// A second service for the same folder is still refused.
	again := a.peerctl(t, nil, "serve")
	assert.Equal(t, 1, again.Code)
	assert.Contains(t, string(again.Stderr), fmt.Sprintf("another peerctl serve (pid %d) already serves", pa))
	assert.Contains(t, string(again.Stderr), "peerctl serve stop, then peerctl serve with the options you want (such as --http)", "says how to get the service another way")
}

// serve status with none running (exit 3), a start on demand said once,
// status while it runs, serve stop (logged, with the time on each line of
// serve.log), and stop again with none running.
func TestServeStatusStartNoticeAndStop(t *testing.T) {
	w := newServeWorld(t)
	st, r := w.status(t)
	assert.Equal(t, 3, r.Code, "no service: exit 3; stderr: %s", r.Stderr)
	assert.False(t, st.Running)
	assert.Equal(t, w.dir(), st.StateDir)
	assert.Equal(t, w.socket(), st.Socket)
	assert.Equal(t, 0, st.Messages["stored"])
	human := w.peerctl(t, nil, "serve", "status")
	assert.Equal(t, 3, human.Code)
	assert.Contains(t, string(human.Stdout), "no peerctl serve runs for "+w.dir())
	assert.Zero(t, w.servePID(t), "status starts nothing")

	r = w.peerctl(t, nil, "send", "--json", "--durable=1h", "reviewer", "later")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Equal(t, 1, strings.Count(string(r.Stderr), "started peerctl serve in the background"), "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "peerctl serve stop")
	pid := w.servePID(t)
	require.NotZero(t, pid)
	r = w.peerctl(t, nil, "send", "--json", "--durable=1h", "reviewer", "later again")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.NotContains(t, string(r.Stderr), "started peerctl serve", "said once, by the command that started it")

	st, r = w.status(t)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.True(t, st.Running)
	assert.Equal(t, pid, st.PID)
	assert.Equal(t, w.dir(), st.StateDir)
	assert.Equal(t, w.socket(), st.Socket)
	assert.Equal(t, w.db(), st.Outbox)
	assert.Empty(t, st.OutboxError)
	assert.Equal(t, 2, st.Messages["stored"])
	assert.Contains(t, st.Messages, "outcome_unknown", "every state is counted")
	assert.Equal(t, int64(600), st.IdleExitSeconds)
	assert.Equal(t, int64(30*24*3600), st.RetentionSeconds, "the default retention, 30 days")
	_, err := time.Parse(time.RFC3339, st.StartedAt)
	assert.NoError(t, err)
	assert.NotEmpty(t, st.Version)
	human = w.peerctl(t, nil, "serve", "status")
	require.Equal(t, 0, human.Code)
	assert.Contains(t, string(human.Stdout), fmt.Sprintf("pid        %d", pid))
	assert.Contains(t, string(human.Stdout), "2 stored")
	assert.Contains(t, string(human.Stdout), "retention  a finished message is deleted 720h0m0s after its last change")

	r = w.peerctl(t, nil, "serve", "stop")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), fmt.Sprintf("peerctl serve (pid %d) for %s stopped", pid, w.dir()))
	assert.Zero(t, w.servePID(t), "serve stop returns once the service has ended and freed its lock")

	log, err := os.ReadFile(w.log())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `)
	for _, l := range lines {
		assert.Regexp(t, stamp, l, "every line of serve.log begins with its time")
	}
	assert.Contains(t, string(log), fmt.Sprintf("peerctl serve: stopping (pid %d): peerctl serve stop asked it to", pid))
	assert.Contains(t, lines[len(lines)-1], fmt.Sprintf("peerctl serve: stopped (pid %d)", pid))

	r = w.peerctl(t, nil, "serve", "stop")
	assert.Equal(t, 0, r.Code)
	assert.Contains(t, string(r.Stderr), "no peerctl serve runs for "+w.dir()+": nothing to stop")
	st, r = w.status(t)
	assert.Equal(t, 3, r.Code)
	assert.Equal(t, 2, st.Messages["stored"], "with none running, the outbox's messages are still counted")
}

// --idle-exit ends an idle service, and says why; --quiet is its old
// name, still taken with a notice on stderr (nothing on stdout, which may
// be a --print-unit's file); SIGTERM is logged too.
func TestServeIdleExitQuietAliasAndSignalLogged(t *testing.T) {
	w := newServeWorld(t)
	log := w.startServeWith(t, "--idle-exit=1s")
	eventually(t, 60*time.Second, "the idle service to end", func() bool { return w.servePID(t) == 0 })
	assert.Contains(t, log.String(), "stopping (pid")
	assert.Contains(t, log.String(), "idle for 1s with nothing to deliver (--idle-exit)")

	log = w.startServeWith(t, "--quiet=1s")
	eventually(t, 60*time.Second, "the idle service to end", func() bool { return w.servePID(t) == 0 })
	assert.Contains(t, log.String(), "--quiet is the old name of --idle-exit")
	assert.Contains(t, log.String(), "idle for 1s with nothing to deliver")

	log = w.startServeWith(t)
	w.stopServe(t)
	assert.Regexp(t, `Z peerctl serve: stopping \(pid \d+\): terminated`, log.String())
	eventually(t, 60*time.Second, "the service's last line", func() bool { return strings.Contains(log.String(), "peerctl serve: stopped") })
}

// --print-unit writes the environment that decides the service's folders
// and programs, and names a secret without its value.
func TestServePrintUnitWritesTheEnvironment(t *testing.T) {
	w := newServeWorld(t)
	env := append(w.env(t), "CLAUDE_CONFIG_DIR="+w.config, "OPENCODE_SERVER_PASSWORD=s3cret-value", "PEERCTL_CLAUDE=/opt/claude 100%/claude")
	for _, kind := range []string{"systemd", "launchd"} {
		r := catRun(t, w.sessions, runOpts{Env: env}, "serve", "--print-unit="+kind)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		out := string(r.Stdout)
		assert.Contains(t, out, "--idle-exit=0")
		assert.NotContains(t, out, "s3cret-value", "a secret is never written")
		assert.Contains(t, out, "Not written: OPENCODE_SERVER_PASSWORD")
		assert.Contains(t, out, "SSH_AUTH_SOCK")
		if kind == "systemd" {
			assert.Contains(t, out, `Environment="XDG_STATE_HOME=`+w.state+`"`)
			assert.Contains(t, out, `Environment="CLAUDE_CONFIG_DIR=`+w.config+`"`)
			assert.Contains(t, out, `Environment="PEERCTL_CLAUDE=/opt/claude 100%%/claude"`, "%% is systemd's %")
			assert.Contains(t, out, `Environment="PATH=`)
			assert.Contains(t, out, "systemctl --user daemon-reload")
		} else {
			assert.Contains(t, out, "<key>XDG_STATE_HOME</key><string>"+w.state+"</string>")
			assert.Contains(t, out, "<key>EnvironmentVariables</key>")
			assert.Contains(t, out, "peerctl serve --print-unit=launchd > ~/Library/LaunchAgents/dev.peerctl.serve.plist\n       launchctl bootstrap")
		}
	}
}
