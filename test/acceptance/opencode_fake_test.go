//go:build linux

package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/testbin"
)

// fakeOpencode is a stand-in opencode server (test/opencodefake) running
// as a process of its own, found by peerctl as a real one is (/proc).
type fakeOpencode struct {
	sid, addr string
}

// startFakeOpencode runs test/opencodefake serve in a folder of its own
// with data as its $XDG_DATA_HOME (its database data/opencode/opencode.db,
// whose folder it makes), serving one session titled title; it is killed
// when the test ends.
func startFakeOpencode(t *testing.T, data, title string) fakeOpencode {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(data, "opencode"), 0o700))
	sid := "ses_" + strings.Repeat("A", 22) + "f4k3"
	cmd := exec.Command(testbin.Build(t, "github.com/peerctl/peerctl/test/opencodefake"), "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_DATA_HOME=" + data,
		"OPENCODEFAKE_SESSION=" + sid, "OPENCODEFAKE_TITLE=" + title}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the stand-in opencode server's address")
	return fakeOpencode{sid: sid, addr: strings.TrimSpace(line)}
}

// TestOpencodeSendThroughServeUsesTheSendersDatabase: a peerctl serve
// started where opencode's data folder is another ($XDG_DATA_HOME) carries
// a plain and a durable send to a session of the sender's opencode server:
// the sender's database travels with the request, as the other harnesses'
// folders do; a send to no session names opencode among those searched.
func TestOpencodeSendThroughServeUsesTheSendersDatabase(t *testing.T) {
	w := newServeWorld(t)
	w.more = []string{"XDG_DATA_HOME=" + filepath.Join(t.TempDir(), "nothing-here")}
	w.startServe(t)
	data := t.TempDir()
	oc := startFakeOpencode(t, data, "oc-one")
	env := append(w.env(t), "XDG_DATA_HOME="+data)
	run := func(args ...string) result {
		t.Helper()
		return catRun(t, w.sessions, runOpts{Env: env}, append([]string{"--config-dir", w.config}, args...)...)
	}
	eventually(t, 60*time.Second, "the stand-in opencode session to be listed", func() bool {
		return strings.Contains(string(run("list", "--json", "--harness", "opencode").Stdout), oc.sid)
	})

	r := run("send", "--json", "oc-one", "hello opencode")
	require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	got := decodeReceipt(t, r)
	assert.Equal(t, "delivered", got.Outcome, got.Detail)
	carried, _ := os.ReadFile(filepath.Join(w.dir(), "sent.jsonl"))
	assert.Contains(t, string(carried), "hello opencode", "the service carried it")

	r = run("send", "--json", "--durable", "--key", "oc-d1", "oc-one", "durable to opencode")
	require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	got = decodeReceipt(t, r)
	assert.Equal(t, "delivered", got.Outbox.State, got.Detail)

	r = run("send", "no-such-session", "hi")
	assert.Equal(t, 3, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "opencode sessions", "opencode was searched, and the refusal says so")
}

// TestOpencodeServerAddressIsNoSocketFile: an opencode server's endpoint
// is a TCP address on loopback, not a file: doctor checks no socket
// folder for it (its sockets row says none publishes a socket) (its folder would be "." — the one doctor runs in) nor
// counts it among the sessions with a socket, and show says what it is
// rather than "absent: lstat 127.0.0.1:…".
func TestOpencodeServerAddressIsNoSocketFile(t *testing.T) {
	config, sessions := catRegistry(t)
	data := t.TempDir()
	oc := startFakeOpencode(t, data, "oc-one")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_DATA_HOME=" + data, "PEERCTL_SERVE=off"}
	run := func(args ...string) result {
		t.Helper()
		return catRun(t, sessions, runOpts{Env: env}, append([]string{"--config-dir", config}, args...)...)
	}
	eventually(t, 60*time.Second, "the stand-in opencode session to be listed", func() bool {
		return strings.Contains(string(run("list", "--json", "--harness", "opencode").Stdout), oc.sid)
	})

	r := run("doctor", "--json")
	var doc struct {
		SocketDirs []struct {
			Dir string `json:"dir"`
		} `json:"socketDirs"`
		Reach struct {
			Reachable int `json:"reachable"`
		} `json:"reach"`
		Rows []struct {
			Check, Text string
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &doc), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	assert.Empty(t, doc.SocketDirs, "no socket folder for a TCP address")
	assert.Zero(t, doc.Reach.Reachable, "no session with a socket file")
	for _, row := range doc.Rows {
		if row.Check == "sockets" {
			assert.NotContains(t, row.Text, "mode", "a socket folder checked for a TCP address")
		}
	}

	r = run("show", "--json", "oc-one")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var show struct {
		SocketPath   string `json:"socketPath"`
		SocketOnDisk string `json:"socketOnDisk"`
		SocketNote   string `json:"socketNote"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &show), "stdout: %s", r.Stdout)
	assert.Equal(t, oc.addr, show.SocketPath)
	assert.Equal(t, "unknown", show.SocketOnDisk)
	assert.Contains(t, show.SocketNote, "TCP address")

	r = run("show", "oc-one")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.NotContains(t, string(r.Stdout), "lstat")
	assert.Contains(t, string(r.Stdout), "TCP address on loopback")
}
