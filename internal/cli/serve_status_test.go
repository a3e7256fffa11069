//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/serve"
	"github.com/peerctl/peerctl/ports/wire"
)

func TestStampLines(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 12, 6, 15, 4, 5, 678e6, time.FixedZone("CET", 3600))
	w := &stampWriter{w: &b, now: func() time.Time { return at }}
	for _, p := range []string{"one\ntw", "o\n", "", "\nthree"} {
		n, err := w.Write([]byte(p))
		require.NoError(t, err)
		assert.Equal(t, len(p), n)
	}
	assert.Equal(t, "2026-12-06T14:04:05.678Z one\n2026-12-06T14:04:05.678Z two\n2026-12-06T14:04:05.678Z \n2026-12-06T14:04:05.678Z three", b.String(),
		"each line stamped once, in UTC, however it is written")

	// Lines written at once from many goroutines stay whole.
	b.Reset()
	w = &stampWriter{w: &b, now: time.Now}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, _ = w.Write([]byte("peerctl serve: a line\n"))
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 400)
	for _, l := range lines {
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z peerctl serve: a line$`, l)
	}
}

// fakeService listens on the socket of env's state folder and answers
// each request with answer; it records the ops asked, and keeps a stop's
// connection open until release is closed.
type fakeService struct {
	mu      sync.Mutex
	ops     []string
	release chan struct{}
}

func (f *fakeService) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

func startFakeService(t *testing.T, env map[string]string, answer serve.Answer) *fakeService {
	t.Helper()
	p, err := serve.PathsFor(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(p.Socket), 0o700))
	ln, err := net.Listen("unix", p.Socket)
	require.NoError(t, err)
	f := &fakeService{release: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			var req serve.Request
			if serve.ReadLine(bufio.NewReader(conn), &req) == nil {
				f.mu.Lock()
				f.ops = append(f.ops, req.Op)
				f.mu.Unlock()
				_ = serve.WriteLine(conn, answer)
				if req.Op == "stop" {
					wg.Go(func() { <-f.release; _ = conn.Close() })
					continue
				}
			}
			_ = conn.Close()
		}
	})
	return f
}

func serveEnvFor(t *testing.T) map[string]string {
	state, err := os.MkdirTemp("", "pcst")
	require.NoError(t, err)
	run, err := os.MkdirTemp("", "pcsr")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(state); _ = os.RemoveAll(run) })
	return map[string]string{"XDG_STATE_HOME": state, "XDG_RUNTIME_DIR": run}
}

// A service that answers on the socket but serves another state folder
// is neither reported as this folder's nor asked to stop.
func TestServeStatusRefusesAnotherFoldersService(t *testing.T) {
	env := serveEnvFor(t)
	f := startFakeService(t, env, serve.Answer{PID: 4242, Status: &serve.Status{Running: true, PID: 4242, StateDir: "/elsewhere/peerctl"}})
	r := evRun(t, env, nil, "serve", "status")
	assert.Equal(t, wire.ExitError, r.code)
	assert.Contains(t, r.stderr, "serves the state folder /elsewhere/peerctl, not this one")
	r = evRun(t, env, nil, "serve", "stop")
	assert.Equal(t, wire.ExitError, r.code)
	assert.Contains(t, r.stderr, "not asking it")
	assert.Equal(t, []string{"ping", "ping"}, f.asked(), "never asked to stop")
}

// A service of an older peerctl answers ping without its status: status
// and stop say so and how to end it.
func TestServeStatusOfAnOlderService(t *testing.T) {
	env := serveEnvFor(t)
	startFakeService(t, env, serve.Answer{PID: 4242, Outbox: "/x/outbox.db"})
	r := evRun(t, env, nil, "serve", "stop")
	assert.Equal(t, wire.ExitError, r.code)
	assert.Contains(t, r.stderr, "an older peerctl that cannot say its status or stop on request: end it with kill 4242")
}

// serve stop waits for the service's end (its connection closing), and
// says so; one that does not end within --timeout is an error naming it.
func TestServeStopWaitsForTheEnd(t *testing.T) {
	env := serveEnvFor(t)
	p, err := serve.PathsFor(func(k string) string { return env[k] })
	require.NoError(t, err)
	f := startFakeService(t, env, serve.Answer{PID: 4242, Status: &serve.Status{Running: true, PID: 4242, StateDir: p.StateDir}})
	r := evRun(t, env, nil, "serve", "stop", "--timeout", "50ms")
	assert.Equal(t, wire.ExitError, r.code)
	assert.Contains(t, r.stderr, "peerctl serve (pid 4242) was asked to stop and has not ended within 50ms")
	assert.Contains(t, r.stderr, "kill 4242")

	done := make(chan evResult)
	go func() { done <- evRun(t, env, nil, "serve", "stop", "--timeout", "10m") }()
	require.Eventually(t, func() bool { return len(f.asked()) == 4 }, time.Minute, 10*time.Millisecond)
	close(f.release)
	r = <-done
	assert.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Equal(t, "peerctl serve (pid 4242) for "+p.StateDir+" stopped\n", r.stdout)
	assert.Equal(t, []string{"ping", "stop", "ping", "stop"}, f.asked())
}

func TestServeStopAndStatusWithNoneRunning(t *testing.T) {
	env := serveEnvFor(t)
	r := evRun(t, env, nil, "serve", "stop")
	assert.Equal(t, wire.ExitOK, r.code)
	assert.Contains(t, r.stderr, "no peerctl serve runs for "+filepath.Join(env["XDG_STATE_HOME"], "peerctl")+": nothing to stop")
	r = evRun(t, env, nil, "serve", "status")
	assert.Equal(t, wire.ExitNotLive, r.code)
	assert.Contains(t, r.stdout, "no peerctl serve runs for")
	assert.Contains(t, r.stdout, "messages   none")
	r = evRun(t, env, nil, "serve", "stop", "--timeout", "0s")
	assert.Equal(t, wire.ExitUsage, r.code)
}

func TestUnitEnv(t *testing.T) {
	env := map[string]string{"PATH": "/usr/bin:/opt/bin", "XDG_STATE_HOME": `/srv/a "b" 100%\x`, "CLAUDE_CONFIG_DIR": "/c",
		"OPENCODE_SERVER_PASSWORD": "s3cret", "CODEX_HOME": "bad\nvalue", "HOME": "/home/u", "ANTHROPIC_API_KEY": "sk-1"}
	c := newFactory(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, func(k string) string { return env[k] })
	vars := unitEnv(c.getenv)
	sd := systemdEnv(vars)
	assert.Contains(t, sd, `Environment="PATH=/usr/bin:/opt/bin"`+"\n")
	assert.Contains(t, sd, `Environment="XDG_STATE_HOME=/srv/a \"b\" 100%%\\x"`+"\n", `systemd.exec(5): \ and " escaped, % doubled`)
	assert.Contains(t, sd, `Environment="CLAUDE_CONFIG_DIR=/c"`)
	assert.Contains(t, sd, "# Not written: CODEX_HOME (its value here holds a control character")
	assert.Contains(t, sd, "# Not written: OPENCODE_SERVER_PASSWORD (a secret")
	for _, never := range []string{"s3cret", "sk-1", "HOME=/home/u", "bad\nvalue"} {
		assert.NotContains(t, sd, never)
	}
	ld := launchdEnv(vars)
	assert.Contains(t, ld, "<key>XDG_STATE_HOME</key><string>/srv/a &#34;b&#34; 100%\\x</string>")
	assert.NotContains(t, ld, "s3cret")
	assert.Contains(t, ld, "Not written: SSH_AUTH_SOCK")
}

// A unit printed with a bus (its flags, else its variables) joins the
// fleet when installed: the bus, the node and the credentials (made
// absolute) in its environment, quoted as the unit's syntax needs.
func TestPrintUnitCarriesTheBus(t *testing.T) {
	cwd, err := os.Getwd()
	require.NoError(t, err)
	env := map[string]string{"PATH": "/usr/bin", natsEnv: "nats://env:4222", nodeEnv: "from-env"}
	r := evRun(t, env, nil, "serve", "--print-unit=systemd", "--nats", "nats://a:4222,tls://b:4222", "--node", "beta", "--nats-creds", "keys/beta 100%.creds")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `Environment="PEERCTL_NATS=nats://a:4222,tls://b:4222"`+"\n", "the flag over the variable")
	assert.Contains(t, r.stdout, `Environment="PEERCTL_NODE=beta"`+"\n")
	assert.Contains(t, r.stdout, `Environment="PEERCTL_NATS_CREDS=`+strings.ReplaceAll(filepath.Join(cwd, "keys/beta 100%.creds"), "%", "%%")+`"`+"\n")
	assert.NotContains(t, r.stdout, "nats://env:4222")

	env[natsCredsEnv] = "/etc/peerctl/n.creds"
	r = evRun(t, env, nil, "serve", "--print-unit=launchd")
	require.Equal(t, wire.ExitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "<key>PEERCTL_NATS</key><string>nats://env:4222</string>")
	assert.Contains(t, r.stdout, "<key>PEERCTL_NODE</key><string>from-env</string>")
	assert.Contains(t, r.stdout, "<key>PEERCTL_NATS_CREDS</key><string>/etc/peerctl/n.creds</string>")
}

// A bus URL holding a password or token (nats://USER:PASS@HOST,
// nats://TOKEN@HOST) is a secret: the unit, a file others may read,
// names it and says where to put it, and never holds it.
func TestPrintUnitKeepsNoBusPassword(t *testing.T) {
	for _, urls := range []string{"nats://a:4222,nats://u:pw-s3cret@b:4222", "nats://tok-s3cret@a:4222"} {
		for _, kind := range []string{"systemd", "launchd"} {
			r := evRun(t, map[string]string{"PATH": "/usr/bin"}, nil, "serve", "--print-unit="+kind, "--nats", urls, "--node", "beta")
			require.Equal(t, wire.ExitOK, r.code, r.stderr)
			assert.NotContains(t, r.stdout, "s3cret", "%s %s", kind, urls)
			assert.NotContains(t, r.stdout, "PEERCTL_NATS=", "%s %s: a bus without its password is not the bus", kind, urls)
			assert.Contains(t, r.stdout, "Not written: PEERCTL_NATS (its URL holds a password or token")
			assert.Contains(t, r.stdout, "PEERCTL_NODE", "the rest of the bus is written")
		}
	}
}

// serve's usage errors are printed as every command's: "peerctl: ...",
// exit 2, no log time in front.
func TestServeUsageErrorsAreNotLogLines(t *testing.T) {
	env := serveEnvFor(t)
	for _, args := range [][]string{{"serve", "--idle-exit", "-1s"}, {"serve", "--host", "dev-box"}, {"serve", "--print-unit", "upstart"}} {
		r := evRun(t, env, nil, args...)
		assert.Equal(t, wire.ExitUsage, r.code, "%v", args)
		assert.True(t, strings.HasPrefix(r.stderr, "peerctl: "), "%v: %q", args, r.stderr)
	}
}

// serve status reads plainly: the pid and the peerctl version each on a
// row of their own (a version says its commit in parentheses: never one
// parenthesis inside another), and the couriers row in everyday words.
func TestServeStatusReadsPlainly(t *testing.T) {
	st := &serve.Status{Running: true, PID: 4242, Version: "v1.2.3 (abcdef012345, 2026-12-07 13:00)", StateDir: "/s", Socket: "/s/serve.sock",
		Outbox: "/s/outbox.db", StartedAt: "2026-12-07T13:00:00Z", UptimeSeconds: 60, Messages: map[string]int{},
		Warm: serve.Warm{Sets: 1, InUse: 0, Started: 2}}
	var b bytes.Buffer
	printServeStatus(&b, st)
	out := b.String()
	assert.Contains(t, out, "\n  pid        4242\n")
	assert.Contains(t, out, "\n  version    peerctl v1.2.3 (abcdef012345, 2026-12-07 13:00)\n")
	assert.Contains(t, out, "\n  couriers   0 in use now, 2 started since the service began, kept ready for 1 set of send settings\n")
	for _, l := range strings.Split(out, "\n") {
		depth := 0
		for _, c := range l {
			switch c {
			case '(':
				depth++
				assert.Less(t, depth, 2, "nested parentheses: %q", l)
			case ')':
				depth--
			}
		}
	}
	b.Reset()
	st.Warm = serve.Warm{}
	printServeStatus(&b, st)
	assert.Contains(t, b.String(), "\n  couriers   none started yet\n")
}
