//go:build linux

package acceptance

// Hosts you can trust, live (PEERCTL_LIVE=1, as root, offline): real sshds
// in pid namespaces of their own (test/livessh) behind the system ssh,
// and the faults of issue 27: two aliases with one HostName, port and
// user that reach two machines through two ProxyCommand relays, with
// calls overlapping; connection sharing off for every command; 20 lists
// at once; far sides that crash after taking the text; a caller that is
// interrupted, killed or timed out, and a network that hangs mid-watch,
// with the far side's processes counted afterwards; eight hosts of which
// two hang.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livessh"
	"github.com/peerctl/peerctl/test/testbin"
	"github.com/peerctl/peerctl/test/testproc"
)

// farRunPeerctl is a peerctl run of this machine's that is read as it
// goes (watch, send --await-reply) and signalled by the test.
type farRunPeerctl struct {
	cmd      *exec.Cmd
	done     chan struct{}
	out, err *testproc.Buffer
}

// startPeerctl starts peerctl with args in env; it is killed when the
// test ends.
func startPeerctl(t *testing.T, env []string, args ...string) *farRunPeerctl {
	t.Helper()
	return startPeerctlReading(t, env, nil, args...)
}

// startPeerctlReading is startPeerctl with stdin read from in (nil: none).
func startPeerctlReading(t *testing.T, env []string, in *os.File, args ...string) *farRunPeerctl {
	t.Helper()
	bin := peerctlBin(t) // built before the bound starts
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	r := &farRunPeerctl{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{}), out: &testproc.Buffer{}, err: &testproc.Buffer{}}
	r.cmd.Env = env
	if in != nil {
		r.cmd.Stdin = in
	}
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.err
	r.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// tagged is src (a far side's peerctl) under another name in the
// machine's shared folder: a hard link where it can be (else a copy), so
// that the processes a test started there are told apart by their
// executable's path (ProcessesRunning) from those of tests beside it.
func tagged(t *testing.T, m *livessh.Machine, src, name string) string {
	t.Helper()
	dst := filepath.Join(m.Shared, name)
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	raw, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, raw, 0o755))
	return dst
}

// ended waits at most within for the run's end and reports its exit code.
func (r *farRunPeerctl) ended(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("peerctl %q still runs after %s; stderr: %s", r.cmd.Args[1:], within, r.err.String())
		return -1
	}
}

// waitFor polls cond (every 50 ms) for at most within; false when it did
// not come true.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// farScript writes an executable stand-in for the far side's peerctl into
// the machine's shared folder: it says hello in this build's output
// protocol, reads the text a send announces (--stdin-bytes), then runs
// body.
func farScript(t *testing.T, m *livessh.Machine, name, body string) string {
	t.Helper()
	hello := fmt.Sprintf(`{"hello":"peerctl","outputProtocol":%d,"version":"stand-in"}`, ports.RemoteProtocol)
	script := "#!/bin/sh\nprintf '%s\\n' '" + hello + "'\nn=0\nfor a in \"$@\"; do case $a in --stdin-bytes=*) n=${a#--stdin-bytes=};; esac; done\n" +
		"[ \"$n\" -gt 0 ] && head -c \"$n\" >/dev/null\n" + body + "\n"
	p := filepath.Join(m.Shared, name)
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// twinBlocks are ssh Host blocks for aliases that read one HostName, port
// and user and reach the machine of each relay (a ProxyCommand through
// test/tcprelay), each alias with a known_hosts of its own: keyOf gives
// the host key it knows ("" for none).
func twinBlocks(t *testing.T, relay string, aliases map[string]*livessh.Machine, keyOf func(alias string) string) string {
	t.Helper()
	var b strings.Builder
	for alias, m := range aliases {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		line := ""
		if k := keyOf(alias); k != "" {
			line = "10.255.0.1 " + k + "\n"
		}
		require.NoError(t, os.WriteFile(kh, []byte(line), 0o600))
		fmt.Fprintf(&b, "Host %s\n  HostName 10.255.0.1\n  Port 22\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  ProxyCommand %s 127.0.0.1 %d\n"+
			"  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  LogLevel ERROR\n",
			alias, m.User, m.ClientKey(), relay, m.Port, kh)
	}
	return b.String()
}

func TestLiveSSHFaults(t *testing.T) {
	livessh.Require(t)
	t.Parallel()
	bin := livecc.Require(t, KnownNewestClaudeCode)
	a := livessh.Start(t, "boxa")
	b := livessh.StartTwin(t, "boxb", a)
	sa := a.StartClaude(bin, livessh.SessionOptions{Label: "sa", Name: "on-a"})
	sb := b.StartClaude(bin, livessh.SessionOptions{Label: "sb", Name: "on-b"})

	// One ssh config: a's and b's own aliases, two more of a's (hang1,
	// hang2) and the twins.
	relay := testbin.Build(t, testbin.TCPRelay)
	raw, err := os.ReadFile(a.SSHConfig)
	require.NoError(t, err)
	rawB, err := os.ReadFile(b.SSHConfig)
	require.NoError(t, err)
	hangs := strings.ReplaceAll(strings.SplitN(string(raw), "Host ", 3)[1], a.Alias+"\n", "hang1 hang2\n")
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	require.NoError(t, os.WriteFile(cfg, []byte(string(raw)+string(rawB)+"Host "+hangs+twinBlocks(t, relay,
		map[string]*livessh.Machine{"twin-a": a, "twin-b": b, "twin-a-unknown": a},
		func(alias string) string {
			switch alias {
			case "twin-a":
				return a.HostKey()
			case "twin-b":
				return b.HostKey()
			}
			return ""
		})), 0o600))
	baseEnv := func(t *testing.T) []string {
		run := livecc.TempRoot(t, "lsr")
		return append(livecc.Scrub(os.Environ()), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_RUNTIME_DIR="+run,
			"PEERCTL_SSH=ssh -F "+cfg, "CLAUDE_CONFIG_DIR="+t.TempDir())
	}
	env := baseEnv(t)
	r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "install", "--json", a.Alias)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var inst struct{ Path string }
	require.NoError(t, json.Unmarshal(r.Stdout, &inst), "stdout: %s", r.Stdout)
	installed := inst.Path // a's and b's user is one: one home, one install
	add := func(t *testing.T, env []string, alias string, settings ...string) {
		t.Helper()
		args := []string{"hosts", "add", alias}
		for _, s := range settings {
			args = append(args, "--set", s)
		}
		r := runPeerctl(t, runOpts{Env: env}, args...)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}
	// setUp adds every alias to env's hosts file with program as the far
	// side's peerctl.
	setUp := func(t *testing.T, env []string, program string) {
		t.Helper()
		add(t, env, a.Alias, "peerctl="+program, "config-dir="+sa.ConfigDir, "claude="+sa.Bin)
		add(t, env, b.Alias, "peerctl="+program, "config-dir="+sb.ConfigDir, "claude="+sb.Bin)
		add(t, env, "twin-a", "peerctl="+program, "config-dir="+sa.ConfigDir, "claude="+sa.Bin)
		add(t, env, "twin-a-unknown", "peerctl="+program, "config-dir="+sa.ConfigDir)
		add(t, env, "twin-b", "peerctl="+program, "config-dir="+sb.ConfigDir, "claude="+sb.Bin)
		add(t, env, a.User+"@"+a.Alias, "peerctl="+program, "config-dir="+sa.ConfigDir)
		add(t, env, a.User+"@twin-b", "peerctl="+program, "config-dir="+sb.ConfigDir)
	}
	setUp(t, env, installed)
	running := func(m *livessh.Machine, program string) int { return len(m.ProcessesRunning(program)) }

	t.Run("twin aliases each reach their own machine, calls overlapping", func(t *testing.T) {
		w := startPeerctl(t, env, "watch", "--host", "twin-b", "--json")
		require.True(t, waitFor(60*time.Second, func() bool { return running(b, installed) > 0 }), "the watch runs on b; stderr: %s", w.err.String())
		got, r := listHosts(t, env, "--host", "twin-a")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		require.Len(t, got, 1, "stdout: %s", r.Stdout)
		assert.Equal(t, sa.SessionID, got[0].SessionID, "twin-a lists a's session: it ran on a, not over b's connection")
		assert.Equal(t, "twin-a", got[0].Host)

		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--host", "twin-a", "--json", "on-a", "for a only")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		// The receipt can come before the transcript line (queued): wait for it.
		assert.True(t, waitFor(60*time.Second, func() bool { return strings.Contains(sa.Transcript(), "for a only") }), "the text reached a's session")
		assert.NotContains(t, sb.Transcript(), "for a only")

		_, r = listHosts(t, env, "--host", "twin-a-unknown")
		assert.Equal(t, 10, r.Code, "an unknown host key is refused while a connection to that address is open; stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "Host key verification failed")
		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "check", "twin-a-unknown")
		assert.Equal(t, 10, r.Code, "stdout: %s", r.Stdout)
		assert.Regexp(t, `(?m)^host key +fail `, string(r.Stdout))

		_ = w.cmd.Process.Signal(syscall.SIGINT)
		w.ended(t, 60*time.Second)
	})

	t.Run("a ProxyCommand host keeps its shared connection between calls", func(t *testing.T) {
		_, r := listHosts(t, env, "--host", "twin-a") // the master, if none is up yet
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		before := a.Accepted()
		for range 3 {
			_, r := listHosts(t, env, "--host", "twin-a")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		}
		assert.Equal(t, before, a.Accepted(), "three calls, no new connection: the master and its relay outlived each call")
	})

	t.Run("20 lists at once all succeed", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t) // no master up yet: every one of them needs one
		setUp(t, env, installed)
		var wg sync.WaitGroup
		results := make([]result, 20)
		for i := range results {
			wg.Go(func() {
				results[i] = runPeerctl(t, runOpts{Env: env, Timeout: 180 * time.Second}, "list", "--json", "--host", a.Alias)
			})
		}
		wg.Wait()
		for i, r := range results {
			assert.Equal(t, 0, r.Code, "list %d: stderr: %s", i, r.Stderr)
			assert.Contains(t, string(r.Stdout), sa.SessionID, "list %d", i)
		}
	})

	t.Run("sharing off: every command works, one warning a run", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t)
		program := tagged(t, a, installed, "peerctl-unshared")
		setUp(t, env, program)
		run := livecc.TempRoot(t, "lso")
		ctl := filepath.Join(run, "peerctl-ssh-"+strconv.Itoa(os.Geteuid()))
		require.NoError(t, os.Mkdir(ctl, 0o777))
		require.NoError(t, os.Chmod(ctl, 0o777))
		env = append(env, "XDG_RUNTIME_DIR="+run)
		warned := func(t *testing.T, stderr []byte) {
			t.Helper()
			assert.Equal(t, 1, strings.Count(string(stderr), "connection sharing off"), "stderr: %s", stderr)
		}
		for _, args := range [][]string{
			{"list", "--json", "--host", a.Alias},
			{"show", "--json", "--host", a.Alias, "on-a"},
			{"enrich", "--json", "--host", a.Alias, sa.SessionID},
			{"doctor", "--host", a.Alias},
			{"send", "--json", "--host", a.Alias, "on-a", "sharing is off"},
		} {
			r := runPeerctl(t, runOpts{Env: env, Timeout: 180 * time.Second}, args...)
			assert.Equal(t, 0, r.Code, "%q: stdout: %s\nstderr: %s", args, r.Stdout, r.Stderr)
			warned(t, r.Stderr)
		}
		w := startPeerctl(t, env, "watch", "--json", "--host", a.Alias)
		require.True(t, waitFor(60*time.Second, func() bool { return strings.Contains(w.err.String(), "sharing off") && running(a, program) > 0 }), "stderr: %s", w.err.String())
		_ = w.cmd.Process.Signal(syscall.SIGINT)
		assert.Equal(t, 0, w.ended(t, 60*time.Second), "stderr: %s", w.err.String())
		warned(t, []byte(w.err.String()))

		rr := startRelay(t, env, "--host", a.Alias)
		require.Equal(t, "ready", rr.nextWithin(t, 120*time.Second)["type"], "stderr: %s", rr.err.String())
		rr.write(t, map[string]any{"id": 1, "to": sa.SessionID, "text": "relayed, sharing off"})
		for m := rr.nextWithin(t, 120*time.Second); m["type"] != "receipt"; m = rr.nextWithin(t, 120*time.Second) {
			require.Equal(t, "inbound", m["type"], "%v; stderr: %s", m, rr.err.String())
		}
		require.NoError(t, rr.stdin.Close())
		<-rr.done
		assert.Equal(t, 0, rr.cmd.ProcessState.ExitCode(), "stderr: %s", rr.err.String())
	})

	t.Run("a far side that fails after taking the text: outcome_unknown", func(t *testing.T) {
		t.Parallel()
		for name, body := range map[string]string{
			"panic, exit 2": "echo 'panic: runtime error: index out of range' >&2\nexit 2",
			"exit 1":        "exit 1",
			"killed by 9":   "kill -9 $$",
		} {
			env := baseEnv(t)
			add(t, env, a.Alias, "peerctl="+farScript(t, a, "crash-"+strings.Fields(name)[0], body))
			r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--host", a.Alias, "on-a", "taken, then a crash")
			assert.Equal(t, 12, r.Code, "%s: stderr: %s", name, r.Stderr)
			assert.Contains(t, string(r.Stderr), "outcome_unknown", name)
			assert.Contains(t, string(r.Stderr), a.Alias, name)
		}
	})

	t.Run("nothing is left running there", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t)
		program := tagged(t, a, installed, "peerctl-left")
		setUp(t, env, program)
		farPeerctls := func(m *livessh.Machine) int { return running(m, program) }
		// Interrupted while it waits for a reply (the session has no model:
		// none comes).
		s := startPeerctl(t, env, "send", "--host", a.Alias, "--await-reply=10m", "on-a", "are you there, far side")
		require.True(t, waitFor(120*time.Second, func() bool { return strings.Contains(sa.Transcript(), "are you there, far side") }), "stderr: %s", s.err.String())
		require.Positive(t, farPeerctls(a), "the far send waits for the reply")
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		s.ended(t, 60*time.Second)
		assert.True(t, waitFor(30*time.Second, func() bool { return farPeerctls(a) == 0 }), "the far send ended with its caller: %v left", a.ProcessesRunning(program))

		// Killed (SIGKILL: no handler runs here) mid-watch.
		w := startPeerctl(t, env, "watch", "--json", "--host", a.Alias)
		require.True(t, waitFor(60*time.Second, func() bool { return farPeerctls(a) > 0 }), "stderr: %s", w.err.String())
		_ = w.cmd.Process.Kill()
		w.ended(t, 60*time.Second)
		assert.True(t, waitFor(30*time.Second, func() bool { return farPeerctls(a) == 0 }), "the far watch ended with its caller: %v left", a.ProcessesRunning(program))

		// Killed mid-relay, its requests' stream still open.
		// An os.Pipe, not an io.Pipe: its read end is the process's stdin
		// itself, so no copying goroutine outlives the kill.
		requests, keepOpen, err := os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { _ = keepOpen.Close(); _ = requests.Close() })
		rl := startPeerctlReading(t, env, requests, "relay", "--host", a.Alias)
		require.True(t, waitFor(60*time.Second, func() bool { return farPeerctls(a) > 0 }), "stderr: %s", rl.err.String())
		_ = rl.cmd.Process.Kill()
		rl.ended(t, 60*time.Second)
		assert.True(t, waitFor(30*time.Second, func() bool { return farPeerctls(a) == 0 }), "the far relay ended with its caller: %v left", a.ProcessesRunning(program))
	})

	t.Run("a host that hangs: one timeout, about its bound", func(t *testing.T) {
		t.Parallel()
		env := append(baseEnv(t), "PEERCTL_HOST_TIMEOUT=4s")
		hang := farScript(t, a, "hang", "exec cat >/dev/null")
		for _, h := range []string{"hang1", "hang2"} {
			add(t, env, h, "peerctl="+hang)
		}
		setUp(t, env, installed)
		r := runPeerctl(t, runOpts{Env: env, Timeout: 60 * time.Second}, "list", "--json", "--host", "hang1")
		assert.Equal(t, 10, r.Code, "stderr: %s", r.Stderr)
		t.Logf("list --host hang1 with a 4s host timeout ended after %s", r.Elapsed.Round(10*time.Millisecond))
		assert.Less(t, r.Elapsed, 4*time.Second+2*time.Second, "the host timeout ends the call near its bound")

		// Eight hosts, two of them hanging: about one timeout in all, every
		// other host's rows, one warning for each hanging one.
		hosts := []string{a.Alias, "twin-a", b.Alias, "twin-b", "hang1", "hang2", a.User + "@" + a.Alias, a.User + "@twin-b"}
		args := []string{"list", "--json"}
		for _, h := range hosts {
			args = append(args, "--host", h)
		}
		r = runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, args...)
		t.Logf("list over 8 hosts, 2 hanging, with a 4s host timeout ended after %s", r.Elapsed.Round(10*time.Millisecond))
		assert.Equal(t, 10, r.Code, "stderr: %s", r.Stderr)
		assert.Less(t, r.Elapsed, 8*time.Second, "the hosts are reached at once: not one timeout after another")
		var got []hostEntry
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
		byHost := map[string]string{}
		for _, e := range got {
			byHost[e.Host] = e.SessionID
		}
		assert.Equal(t, map[string]string{a.Alias: sa.SessionID, "twin-a": sa.SessionID, b.Alias: sb.SessionID, "twin-b": sb.SessionID,
			a.User + "@" + a.Alias: sa.SessionID, a.User + "@twin-b": sb.SessionID}, byHost)
		for _, h := range []string{"hang1", "hang2"} {
			assert.Contains(t, string(r.Stderr), "host "+h+": not listed", h)
		}
		assert.True(t, waitFor(30*time.Second, func() bool { return len(a.ProcessesRunning("/usr/bin/cat")) == 0 }), "the hanging stand-ins ended with their callers")
	})
}

// TestLiveSSHNetworkHangs: a network that stops answering mid-watch and
// mid-relay (the far sshd's connection processes stopped: nothing
// answers, nothing closes) ends the watch with a lost event and exit 10,
// and the relay with exit 10, within the keepalive's bound
// (ServerAliveInterval 15 s × ServerAliveCountMax 2, about 45 s; logged,
// and bounded here by 120 s for a loaded machine); once the network is
// back, nothing is left running there.
func TestLiveSSHNetworkHangs(t *testing.T) {
	livessh.Require(t)
	t.Parallel()
	n := livessh.Start(t, "boxn")
	env := append(sshEnv(t, n), "CLAUDE_CONFIG_DIR="+t.TempDir())
	r := runPeerctl(t, runOpts{Env: env, Timeout: 120 * time.Second}, "hosts", "install", "--json", n.Alias)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var inst struct{ Path string }
	require.NoError(t, json.Unmarshal(r.Stdout, &inst), "stdout: %s", r.Stdout)
	cfgDir := filepath.Join(n.Home, "cfg")
	_, err := n.SSH(context.Background(), nil, "mkdir", "-p", cfgDir)
	require.NoError(t, err)
	r = runPeerctl(t, runOpts{Env: env}, "hosts", "add", n.Alias, "--set", "config-dir="+cfgDir)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)

	w := startPeerctl(t, env, "watch", "--json", "--host", n.Alias)
	requests, feed, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = feed.Close() })
	rl := startPeerctlReading(t, env, requests, "relay", "--host", n.Alias)
	_ = requests.Close()
	require.True(t, waitFor(60*time.Second, func() bool {
		return len(n.ProcessesRunning(inst.Path)) == 2 && strings.Contains(rl.out.String(), `"ready"`)
	}), "watch stderr: %s\nrelay stderr: %s", w.err.String(), rl.err.String())
	n.SignalConnections(syscall.SIGSTOP)
	stopped := time.Now()
	for what, p := range map[string]*farRunPeerctl{"watch": w, "relay": rl} {
		code := p.ended(t, 120*time.Second)
		t.Logf("the %s ended %s after the network stopped", what, time.Since(stopped).Round(100*time.Millisecond))
		assert.Equal(t, 10, code, "%s stderr: %s", what, p.err.String())
		assert.Contains(t, p.err.String(), n.Alias, what)
	}
	n.SignalConnections(syscall.SIGCONT)
	assert.True(t, waitFor(60*time.Second, func() bool { return len(n.ProcessesRunning(inst.Path)) == 0 }),
		"the far watch ended once its connection was gone: %v left", n.ProcessesRunning(inst.Path))
	assert.Contains(t, w.out.String(), `"event":"lost"`)
}
