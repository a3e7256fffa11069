//go:build linux

package acceptance

// Sessions on other machines (PEERCTL_LIVE=1, as root, offline): each
// "machine" is an OpenSSH server on 127.0.0.1 in a pid namespace of its
// own for a user made for the run (test/livessh), with a real Claude Code
// session behind it as that user. peerctl reaches it with the system ssh
// and host-key checking on, exactly as it reaches a dev box.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livessh"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// sshEnv is an environment for peerctl that reaches machines through their
// ssh config, with a hosts file of its own (XDG_CONFIG_HOME), a short
// XDG_RUNTIME_DIR for the shared connections' sockets and no login.
func sshEnv(t *testing.T, machines ...*livessh.Machine) []string {
	t.Helper()
	run := livecc.TempRoot(t, "lsr")
	return append(livecc.Scrub(os.Environ()), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_RUNTIME_DIR="+run,
		"PEERCTL_SSH="+livessh.SSHCommand(t, machines...))
}

// hostEntry is one session of a `list --json` that carries hosts.
type hostEntry struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
	Verdict   string `json:"verdict"`
	Endpoint  string `json:"endpoint"`
}

func listHosts(t *testing.T, env []string, args ...string) ([]hostEntry, result) {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, append([]string{"list", "--json"}, args...)...)
	var got []hostEntry
	if r.Code == 0 {
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	}
	return got, r
}

// homeFiles lists the files under the machine user's home, but the
// sessions' own folders (what Claude Code writes), relative to it.
func homeFiles(t *testing.T, m *livessh.Machine, skip ...string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(m.Home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.Home, p)
		if d.IsDir() && slices.Contains(skip, rel) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	}))
	return files
}

func TestLiveSSH(t *testing.T) {
	livessh.Require(t)
	bin := livecc.Require(t, KnownNewestClaudeCode)
	srv := scriptedmodel.Start(t, replyScript)
	far, far2 := livessh.Start(t, "far"), livessh.Start(t, "far2")
	one := far.StartClaude(bin, livessh.SessionOptions{Label: "one", Name: "far-one", ModelURL: srv.URL(), ModelKey: srv.Key(),
		Settings: livecc.ReplySettings(), WaitSettled: true})
	two := far2.StartClaude(bin, livessh.SessionOptions{Label: "two", Name: "far-two"})
	here := livecc.Start(t, bin, livecc.Options{Name: "here-one"})
	env := append(sshEnv(t, far, far2), "CLAUDE_CONFIG_DIR="+here.ConfigDir, "PEERCTL_CLAUDE="+bin)
	for _, h := range []struct {
		m *livessh.Machine
		s *livessh.Session
	}{{far, one}, {far2, two}} {
		r := runPeerctl(t, runOpts{Env: env}, "hosts", "add", h.m.Alias, "--set", "config-dir="+h.s.ConfigDir, "--set", "claude="+h.s.Bin)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}

	t.Run("a host without peerctl: the refusal names the install", func(t *testing.T) {
		_, r := listHosts(t, env, "--host", far.Alias)
		assert.Equal(t, 10, r.Code, "stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "host_unreachable")
		assert.Contains(t, string(r.Stderr), "peerctl hosts install "+far.Alias)
	})

	var installed string
	t.Run("hosts install puts this build there and nothing else", func(t *testing.T) {
		before := homeFiles(t, far, "one")
		r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "install", "--json", far.Alias)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		var got struct {
			Path, SHA256, OS, Arch string
			Kept                   bool
		}
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		installed = got.Path
		assert.Regexp(t, `^`+far.Home+`/\.cache/peerctl/bin/[A-Za-z0-9._+-]+-[0-9a-f]{12}/peerctl$`, got.Path)
		assert.False(t, got.Kept)
		after := homeFiles(t, far, "one")
		rel, _ := filepath.Rel(far.Home, got.Path)
		assert.ElementsMatch(t, append(before, rel), after, "the versioned install is the one file written there")
		fi, err := os.Stat(got.Path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

		r = runPeerctl(t, runOpts{Env: env}, "hosts", "list", "--json")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stdout), `"peerctl": "`+got.Path+`"`, "the hosts file names the install")

		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "install", far.Alias)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stdout), "already there: "+got.Path, "a second install keeps the first")
		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "install", far2.Alias)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	})
	require.NotEmpty(t, installed, "the install above failed")

	t.Run("hosts check says what works", func(t *testing.T) {
		r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "check", far.Alias)
		assert.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		for _, row := range []string{"ssh", "host key", "peerctl", "doctor"} {
			assert.Regexp(t, `(?m)^`+row+` +ok `, string(r.Stdout))
		}
		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "check", far.UnknownKey)
		assert.Equal(t, 10, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		assert.Regexp(t, `(?m)^host key +fail `, string(r.Stdout))
	})

	t.Run("list --host: live there, foreign here", func(t *testing.T) {
		got, r := listHosts(t, env, "--host", far.Alias)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		require.Len(t, got, 1, "stdout: %s", r.Stdout)
		assert.Equal(t, far.Alias, got[0].Host)
		assert.Equal(t, one.SessionID, got[0].SessionID)
		assert.Equal(t, "far-one", got[0].Name)
		assert.True(t, strings.HasPrefix(got[0].Endpoint, "ssh:v1:"+far.Alias+":"), got[0].Endpoint)

		local := runPeerctl(t, runOpts{Env: env}, "list", "--all", "--json", "--config-dir", one.ConfigDir)
		require.Equal(t, 0, local.Code, "stderr: %s", local.Stderr)
		var recs []hostEntry
		require.NoError(t, json.Unmarshal(local.Stdout, &recs), "stdout: %s", local.Stdout)
		require.Len(t, recs, 1, "stdout: %s", local.Stdout)
		assert.Equal(t, "foreign", recs[0].Verdict, "read here, the far session is another pid domain's")
	})

	t.Run("two hosts and this machine in one list", func(t *testing.T) {
		got, r := listHosts(t, env, "--hosts")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		byHost := map[string]string{}
		for _, e := range got {
			byHost[e.Host] = e.SessionID
		}
		assert.Equal(t, map[string]string{"": here.SessionID, far.Alias: one.SessionID, far2.Alias: two.SessionID}, byHost, "stdout: %s", r.Stdout)
		table := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "list", "--hosts")
		require.Equal(t, 0, table.Code, "stderr: %s", table.Stderr)
		assert.Contains(t, string(table.Stdout), "HOST")
	})

	t.Run("send --host delivers byte-exact and nothing in it runs", func(t *testing.T) {
		marker := filepath.Join(far.Home, "ran")
		hostile := fmt.Sprintf("'quoted' \"double\" $(touch %s) `touch %s` ; touch %s\n$HOME \\ second line\n", marker, marker, marker)
		for name, text := range map[string]string{"hostile": hostile, "exactly 64 KiB": transporttest.Exactly(64 * 1024)} {
			r := runPeerctl(t, runOpts{Env: env, Stdin: []byte(text), Timeout: 180 * time.Second},
				"send", "--host", far.Alias, "--json", "--confirm-timeout", "60s", "--from", "over-ssh", "far-one", "-")
			require.Equal(t, 0, r.Code, "%s: stderr: %s\nscreen:\n%s", name, r.Stderr, one.Screen())
			var got courierReceipt
			require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
			assert.NotEmpty(t, got.MsgID, name)
			assert.True(t, enqueued(t, one.TranscriptPath(), "over-ssh", text), "%s: the transcript holds the exact text", name)
		}
		assert.NoFileExists(t, marker, "nothing in the text ran")
	})

	t.Run("send --await-reply over ssh", func(t *testing.T) {
		r := runPeerctl(t, runOpts{Env: env, Timeout: 180 * time.Second}, "send", "--host", far.Alias, "--await-reply=90s", "far-one", "ping over ssh")
		require.Equal(t, 0, r.Code, "stderr: %s\nscreen:\n%s", r.Stderr, one.Screen())
		assert.Equal(t, "pong: ping over ssh\n", string(r.Stdout))
	})

	t.Run("send --durable --host: kept while the host is down, delivered once when it is up", func(t *testing.T) {
		l := &liveServe{state: t.TempDir(), run: catSocketDir(t)}
		l.env = append(slices.Clip(env), "XDG_STATE_HOME="+l.state, "XDG_RUNTIME_DIR="+l.run, "PEERCTL_HOST_TIMEOUT=20s")
		t.Cleanup(l.kill)
		l.start(t)
		text := "durable over ssh " + strconv.FormatInt(time.Now().UnixNano(), 36)
		far.Down()
		t.Cleanup(far.Up)
		r := l.peerctl(t, "send", "--host", far.Alias, "--json", "--durable=10m", "--confirm-timeout", "60s", "--from", "durable-ssh", "far-one", text)
		require.Equal(t, 0, r.Code, "stderr: %s\nlog: %s", r.Stderr, l.log)
		got := decodeReceipt(t, r)
		assert.Equal(t, "stored", got.Outcome)
		assert.Contains(t, got.Detail, "host_unreachable")
		far.Up()
		eventually(t, 4*time.Minute, "the message to be delivered on "+far.Alias, func() bool { return l.message(t, got.Outbox.ID).State.Handed() })
		m := l.message(t, got.Outbox.ID)
		assert.Equal(t, domain.OutboxDelivered, m.State, "%s; log: %s", m.Reason, l.log)
		assert.Equal(t, far.Alias, m.Host)
		assert.NotEmpty(t, m.MsgID, "the far courier's receipt")
		assert.Equal(t, 1, enqueuedCount(t, one.TranscriptPath(), text), "exactly once there; log: %s", l.log)
	})

	t.Run("send --durable --await-reply over ssh talks: the far side's events through this machine's service", func(t *testing.T) {
		l := &liveServe{state: t.TempDir(), run: catSocketDir(t)}
		l.env = append(slices.Clip(env), "XDG_STATE_HOME="+l.state, "XDG_RUNTIME_DIR="+l.run, "PEERCTL_HOST_TIMEOUT=20s")
		t.Cleanup(l.kill)
		l.start(t)
		r := runPeerctl(t, runOpts{Env: l.env, Timeout: 180 * time.Second}, "send", "--host", far.Alias, "--durable=10m", "--await-reply=90s", "far-one", "ping durable over ssh")
		require.Equal(t, 0, r.Code, "stderr: %s\nlog: %s\nscreen:\n%s", r.Stderr, l.log, one.Screen())
		assert.Equal(t, "pong: ping durable over ssh\n", string(r.Stdout))
		// Told at the hand-over (the far side's event), then the wait: a
		// receipt relayed only at the end comes with no wait line.
		assert.Regexp(t, `(?m)^(handed over|queued|delivered): "far-one" \(session [0-9a-f-]+, pid \d+, outbox message \d+\) on `+far.Alias+` by courier.*\n(.*\n)*peerctl: waiting up to \S+ \(until \d\d:\d\d:\d\d UTC\) for "far-one" to reply`, string(r.Stderr))
	})

	t.Run("relay over ssh: 10 sends, 10 receipts in order", func(t *testing.T) {
		rr := startRelay(t, env, "--host", far.Alias)
		require.Equal(t, "ready", rr.nextWithin(t, 120*time.Second)["type"], "stderr: %s", rr.err.String())
		const n = 10
		for i := range n {
			rr.write(t, map[string]any{"id": i, "to": one.SessionID, "text": fmt.Sprintf("relayed %02d", i)})
		}
		var receipts []map[string]any
		for len(receipts) < n {
			m := rr.nextWithin(t, 120*time.Second)
			switch m["type"] {
			case "receipt":
				receipts = append(receipts, m)
			case "inbound":
			default:
				t.Fatalf("after %d receipts, unexpected line %v; stderr: %s", len(receipts), m, rr.err.String())
			}
		}
		for i, m := range receipts {
			assert.Equal(t, float64(i), m["id"], "input order")
			assert.Equal(t, one.SessionID, m["sessionId"])
			assert.Equal(t, far.Alias, m["host"])
		}
		require.NoError(t, rr.stdin.Close())
		<-rr.done
		assert.Equal(t, 0, rr.cmd.ProcessState.ExitCode(), "stderr: %s", rr.err.String())
	})

	t.Run("unknown host key, wrong key: host_unreachable, nothing delivered", func(t *testing.T) {
		for _, alias := range []string{far.UnknownKey, far.WrongKey} {
			r := runPeerctl(t, runOpts{Env: env}, "hosts", "add", alias, "--set", "peerctl="+installed, "--set", "config-dir="+one.ConfigDir)
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--host", alias, "--json", "far-one", "must not arrive via "+alias)
			assert.Equal(t, 10, r.Code, "%s: stderr: %s", alias, r.Stderr)
			assertRefusalJSON(t, r, "host_unreachable", 10)
			_, r = listHosts(t, env, "--host", alias)
			assert.Equal(t, 10, r.Code, "%s: stderr: %s", alias, r.Stderr)
			assert.False(t, strings.Contains(one.Transcript(), "must not arrive via "+alias), "%s: nothing reached the session", alias)
		}
	})

	t.Run("a connection killed before the far side answers: host_unreachable, nothing delivered", func(t *testing.T) {
		// The far side's "peerctl" stalls before it says hello (a wrapper
		// that waits, then runs the install); the connection is killed
		// while it waits, so the text was never handed over.
		started := filepath.Join(far.Home, "stalled")
		stall := filepath.Join(far.Shared, "stall-peerctl")
		require.NoError(t, os.WriteFile(stall, []byte("#!/bin/sh\ntouch "+domain.ShellQuote(started)+"\nsleep 600\nexec "+domain.ShellQuote(installed)+` "$@"`+"\n"), 0o755))
		kenv := append(sshEnv(t, far), "CLAUDE_CONFIG_DIR="+here.ConfigDir)
		r := runPeerctl(t, runOpts{Env: kenv}, "hosts", "add", far.Alias, "--set", "peerctl="+stall, "--set", "config-dir="+one.ConfigDir)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		done := make(chan result, 1)
		go func() {
			done <- runPeerctl(t, runOpts{Env: kenv, Timeout: 120 * time.Second}, "send", "--host", far.Alias, "--json", "far-one", "must not arrive: killed")
		}()
		for {
			if _, err := os.Stat(started); err == nil {
				break
			}
			select {
			case r := <-done:
				t.Fatalf("send ended before the far side started: %d %s", r.Code, r.Stderr)
			case <-time.After(20 * time.Millisecond):
			}
		}
		far.KillConnections()
		r = <-done
		assert.Equal(t, 10, r.Code, "stderr: %s", r.Stderr)
		assertRefusalJSON(t, r, "host_unreachable", 10)
		assert.False(t, strings.Contains(one.Transcript(), "must not arrive: killed"), "nothing reached the session")
	})
}
