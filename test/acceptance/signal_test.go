//go:build unix

package acceptance

// A send that is interrupted ends its courier's whole process group and says
// so: Ctrl-C (SIGINT), SIGTERM, and SIGHUP (the terminal closed, the SSH
// connection dropped), which would otherwise kill peerctl and leave the
// courier running.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSendSignalEndsTheCourierGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			h := startHangingSend(t, newSendWorld(t, false), "--json", "--timeout", "60s")
			require.NoError(t, h.cmd.Process.Signal(sig))
			const bound = 10 * time.Second
			var err error
			select {
			case err = <-h.exited:
				h.exited <- err // for the cleanup
			case <-time.After(bound):
				t.Fatalf("peerctl did not end within %s of %s", bound, sig)
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit: %v; stderr: %s", err, h.stderr.String())
			assert.Equal(t, 5, ee.ExitCode(), "%v; stderr: %s", ee, h.stderr.String())
			assert.Contains(t, h.stdout.String(), "canceled", "--json's detail keeps the internals")
			assert.Equal(t, "peerctl: delivery_failed: interrupted before the message was handed over: nothing was sent\n", h.stderr.String())
			for _, p := range h.group {
				assert.Eventually(t, func() bool { return !procAlive(p) }, 5*time.Second, 10*time.Millisecond,
					"process %d of the courier's group is still running", p)
			}
		})
	}
}

// An interrupt after the courier was given the text is not a failure: the
// session has the text (the fake posted it, then hung before reporting),
// so the send ends outcome_unknown (exit 12), never delivery_failed (exit 5)
// that a retrying script would take for "send it again".
func TestSendInterruptedAfterTheHandOverIsOutcomeUnknown(t *testing.T) {
	w := newSendWorld(t, false)
	cmd := exec.Command(peerctlBin(t), "--config-dir", w.config, "send", "--json", "--timeout", "60s", w.id, "hello")
	cmd.Env = w.env(t, "sent_hang")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	sent := filepath.Join(w.record, "sent.jsonl")
	require.Eventually(t, func() bool { _, err := os.Stat(sent); return err == nil },
		20*time.Second, 10*time.Millisecond, "the fake claude never ran SendMessage")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var err error
	select {
	case err = <-exited:
		exited <- err
	case <-time.After(10 * time.Second):
		t.Fatal("peerctl did not end within 10s of SIGINT")
	}
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v; stderr: %s", err, stderr.String())
	assert.Equal(t, 12, ee.ExitCode(), "stderr: %s", stderr.String())
	var out struct {
		OK      bool `json:"ok"`
		Refusal struct {
			Reason   string `json:"reason"`
			ExitCode int    `json:"exitCode"`
		} `json:"refusal"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s", stdout.String())
	assert.Equal(t, "outcome_unknown", out.Refusal.Reason)
	assert.Equal(t, 12, out.Refusal.ExitCode)
	assert.Len(t, w.listener.Wait(1), 1, "the text did arrive")
}

// kill -9 of a send leaves nothing of its courier's group running: the
// courier's life is tied to peerctl's (docs/TRANSPORTS.md), although peerctl
// itself had no chance to end it.
func TestSendKilledLeavesNoCourier(t *testing.T) {
	h := startHangingSend(t, newSendWorld(t, false), "--timeout", "60s")
	require.NoError(t, h.cmd.Process.Kill())
	<-h.exited
	h.exited <- nil
	for _, p := range h.group {
		assert.Eventually(t, func() bool { return !procAlive(p) }, 10*time.Second, 10*time.Millisecond,
			"process %d of the courier's group outlived peerctl's kill -9", p)
	}
}

// hangingSend is a send running against the fake claude's fork_hang
// scenario: the courier and its child are running (peerctl set up its
// signal handling before it started them), and group holds their pids.
type hangingSend struct {
	cmd            *exec.Cmd
	exited         chan error
	stdout, stderr bytes.Buffer
	group          []int
}

func startHangingSend(t *testing.T, w sendWorld, args ...string) *hangingSend {
	t.Helper()
	h := &hangingSend{exited: make(chan error, 1)}
	h.cmd = exec.Command(peerctlBin(t), append([]string{"--config-dir", w.config, "send"}, append(args, w.id, "hang")...)...)
	h.cmd.Env = w.env(t, "fork_hang")
	h.cmd.Stdout, h.cmd.Stderr = &h.stdout, &h.stderr
	h.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, h.cmd.Start())
	go func() { h.exited <- h.cmd.Wait() }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		<-h.exited
	})
	children := filepath.Join(w.record, "children")
	require.Eventually(t, func() bool { _, err := os.Stat(children); return err == nil },
		20*time.Second, 10*time.Millisecond, "the fake claude never started its child")
	var pid, pgid int
	_, err := fmt.Sscan(w.fakeFile(t, "pid"), &pid, &pgid)
	require.NoError(t, err)
	h.group = []int{pid}
	for _, f := range strings.Fields(w.fakeFile(t, "children")) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		h.group = append(h.group, n)
	}
	// Whatever happens, nothing of the group outlives the test.
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return h
}

// procAlive reports whether pid exists and is not a zombie.
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || !bytes.HasPrefix(b[i:], []byte(") Z"))
}

// A read of this machine (list, show) starts nothing it must end, so it
// catches no signal: one ends it at once, as it ends any program that does
// not catch it (catching costs every run a locked OS thread and two
// goroutines: docs/PERFORMANCE.md). Here the read waits on a Codex
// app-server daemon that took the connection and never answers.
func TestReadHereIsEndedBySignals(t *testing.T) {
	for _, args := range [][]string{{"list", "--json"}, {"show", "build-3f"}} {
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
			t.Run(args[0]+"/"+sig.String(), func(t *testing.T) {
				if signal.Ignored(sig) {
					// Under nohup (or any parent that ignores it) a signal
					// ignored here is ignored by every program started from
					// here: it cannot end one that does not catch it.
					t.Skipf("%s is ignored by this test process, so by peerctl too", sig)
				}
				home := t.TempDir()
				asked := silentCodexDaemon(t)
				cmd := exec.Command(peerctlBin(t), args...)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + asked.home,
					"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "XDG_RUNTIME_DIR=" + t.TempDir()}
				r := startSignalled(t, cmd, func() {
					select {
					case c := <-asked.conn:
						asked.conn <- c
					case <-time.After(20 * time.Second):
						t.Fatal("peerctl never asked the Codex daemon")
					}
				}, sig)
				var ee *exec.ExitError
				require.True(t, errors.As(r.err, &ee), "exit: %v; stderr: %s", r.err, r.stderr)
				ws, ok := ee.Sys().(syscall.WaitStatus)
				require.True(t, ok)
				assert.True(t, ws.Signaled() && ws.Signal() == sig, "want ended by %s, got %v; stderr: %s", sig, ee, r.stderr)
			})
		}
	}
}

// A read of another machine catches signals, as a send does: its ssh's
// process group is ended and peerctl exits with its own code.
func TestReadOfAHostCatchesSignals(t *testing.T) {
	for _, args := range [][]string{{"list", "--json", "--host", "dev-box"}, {"show", "--host", "dev-box", "build-3f"}} {
		t.Run(args[0], func(t *testing.T) {
			w := newHostWorld(t)
			cmd := exec.Command(peerctlBin(t), args...)
			cmd.Env = w.env(t, "FAKESSH_MODE=silent", "PEERCTL_HOST_TIMEOUT=5m")
			r := startSignalled(t, cmd, func() {
				require.Eventually(t, func() bool { return w.sshRuns(t) > 0 }, 20*time.Second, 10*time.Millisecond, "ssh never ran")
			}, syscall.SIGINT)
			var ee *exec.ExitError
			require.True(t, errors.As(r.err, &ee), "exit: %v; stderr: %s", r.err, r.stderr)
			ws, ok := ee.Sys().(syscall.WaitStatus)
			require.True(t, ok)
			assert.False(t, ws.Signaled(), "ended by %s: the signal was not caught; stderr: %s", ws.Signal(), r.stderr)
			assert.Contains(t, r.stderr, "canceled")
		})
	}
}

// signalled is how a peerctl run that was sent a signal ended.
type signalled struct {
	err    error
	stderr string
}

// startSignalled starts cmd, waits for ready, sends it sig and waits for
// it to end (10 s at most).
func startSignalled(t *testing.T, cmd *exec.Cmd, ready func(), sig syscall.Signal) signalled {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ready()
	require.NoError(t, cmd.Process.Signal(sig))
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		return signalled{err: err, stderr: stderr.String()}
	case <-time.After(10 * time.Second):
		t.Fatalf("peerctl did not end within 10s of %s", sig)
	}
	return signalled{}
}

// silentDaemon is a Codex home whose app-server control socket takes
// connections and never answers; conn gets the first one.
type silentDaemon struct {
	home string
	conn chan net.Conn
}

func silentCodexDaemon(t *testing.T) silentDaemon {
	t.Helper()
	home, err := os.MkdirTemp("", "cx") // short: a socket's path is at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	require.NoError(t, os.Mkdir(filepath.Join(home, "app-server-control"), 0o700))
	ln, err := net.Listen("unix", filepath.Join(home, "app-server-control", "app-server-control.sock"))
	require.NoError(t, err)
	d := silentDaemon{home: home, conn: make(chan net.Conn, 1)}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			d.conn <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		select {
		case c := <-d.conn:
			_ = c.Close()
		default:
		}
	})
	return d
}
