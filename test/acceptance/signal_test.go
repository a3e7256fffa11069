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
	"os"
	"os/exec"
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
			assert.Contains(t, h.stdout.String()+h.stderr.String(), "canceled")
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
