//go:build unix

package acceptance

// The service stopped at every step of a durable send, against real Claude
// Code 2.1.332 (PEERCTL_LIVE=1), offline: kill -9 and SIGTERM while it
// stores the message, while it delivers it, and between the hand-over and
// its answer. Each time the client's answer (exit code, outcome word,
// stdout and stderr) is held against what `outbox show --json` and the
// session's transcript say afterwards, and once the service runs again:
// nothing lost, nothing twice, every answer true. The windows are hit by
// the fault points of a peerctlfault build of the service
// (internal/serve/fault_on.go), not by timing; the client is the release
// build.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/testbin"
)

// stopAs stops the service with sig: SIGKILL to its whole process group
// (its couriers die with it, as in a crash), SIGTERM to the service alone
// (as `kill PID` or systemd's stop), whose end is waited for.
func (l *liveServe) stopAs(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if sig == syscall.SIGKILL {
		l.kill()
		return
	}
	srv := l.srv
	ended := make(chan error, 1)
	go func() { ended <- srv.Wait() }()
	require.NoError(t, srv.Process.Signal(sig))
	select {
	case <-ended:
	case <-time.After(120 * time.Second):
		t.Fatalf("the service did not end within 120s of %s; log: %s", sig, l.log)
	}
	_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL) // anything it left behind
	l.srv = nil
}

// outboxShow is `peerctl outbox show --json ID` (read-only, no service).
func (l *liveServe) outboxShow(t *testing.T, id int64) outboxEntry {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: append(slices.Clone(l.env), "PEERCTL_SERVE=off"), Timeout: 120 * time.Second},
		"outbox", "show", "--json", strconv.FormatInt(id, 10))
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var m outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &m), "stdout: %s", r.Stdout)
	return m
}

// outboxAll is `peerctl outbox --json` (read-only, no service).
func (l *liveServe) outboxAll(t *testing.T) []outboxEntry {
	t.Helper()
	r := runPeerctl(t, runOpts{Env: append(slices.Clone(l.env), "PEERCTL_SERVE=off"), Timeout: 120 * time.Second}, "outbox", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var ms []outboxEntry
	require.NoError(t, json.Unmarshal(r.Stdout, &ms), "stdout: %s", r.Stdout)
	return ms
}

// killedAnswer is what a client of a stopped service said.
type killedAnswer struct {
	code           int
	stdout, stderr string
}

func (a killedAnswer) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", a.code, a.stdout, a.stderr)
}

func TestLiveServeStoppedAtEveryStep(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	s := livecc.Start(t, bin, livecc.Options{Label: "stopped-service", WaitSettled: true})
	faulty := testbin.BuildTagged(t, testbin.PeerctlMCP, "peerctlfault") // the service runs as peerctl-mcp (it links the outbox's store)
	for _, c := range []struct {
		point string
		sig   syscall.Signal
		// stored: the message is in the outbox once the service ended.
		stored bool
		// code is the client's exit code; look what its stderr names to
		// look at (outcome_unknown), or its outcome word (exit 0).
		code          int
		look, outcome string
	}{
		{point: "store", sig: syscall.SIGKILL, stored: false, code: 12, look: "peerctl outbox --target"},
		{point: "store", sig: syscall.SIGTERM, stored: false, code: 13},
		{point: "stored", sig: syscall.SIGKILL, stored: true, code: 12, look: "peerctl outbox --target"},
		{point: "stored", sig: syscall.SIGTERM, stored: true, code: 0, outcome: "stored"},
		{point: "deliver", sig: syscall.SIGKILL, stored: true, code: 12, look: "peerctl outbox show 1"},
		{point: "deliver", sig: syscall.SIGTERM, stored: true, code: 0, outcome: "stored"},
		{point: "handed", sig: syscall.SIGKILL, stored: true, code: 12, look: "peerctl outbox show 1"},
		{point: "handed", sig: syscall.SIGTERM, stored: true, code: 0, outcome: "delivered"},
	} {
		t.Run(c.point+"/"+strings.ToLower(sigWord(c.sig)), func(t *testing.T) {
			l := newLiveServe(t, s.ConfigDir, bin)
			l.startWith(t, faulty, "PEERCTL_FAULT="+c.point)
			text := fmt.Sprintf("peerctl serve stopped at %s by %s %s", c.point, sigWord(c.sig), strconv.FormatInt(time.Now().UnixNano(), 36))
			key := "stopped-" + c.point + "-" + sigWord(c.sig)
			var stdout, stderr bytes.Buffer
			client := exec.Command(peerctlBin(t), "send", "--json", "--durable=1h", "--key", key, "--confirm-timeout", "60s", s.SessionID, text)
			client.Env, client.Stdout, client.Stderr = l.env, &stdout, &stderr
			require.NoError(t, client.Start())
			t.Cleanup(func() { _ = client.Process.Kill() })
			eventually(t, 180*time.Second, "the service at fault point "+c.point, func() bool {
				return strings.Contains(l.log.String(), "fault point "+c.point+" reached")
			})
			l.stopAs(t, c.sig)
			exited := make(chan error, 1)
			go func() { exited <- client.Wait() }()
			var err error
			select {
			case err = <-exited:
			case <-time.After(120 * time.Second):
				t.Fatalf("the client did not end within 120s of the service's end; stderr: %s", stderr.String())
			}
			a := killedAnswer{stdout: stdout.String(), stderr: stderr.String()}
			if ee := new(exec.ExitError); err != nil {
				require.ErrorAs(t, err, &ee)
				a.code = ee.ExitCode()
			}
			t.Logf("the client said: %s\nthe service's log: %s", a, l.log)

			// The client's answer, against the outbox and the transcript now.
			ms := l.outboxAll(t)
			if !c.stored {
				assert.Empty(t, ms, "nothing is stored; the client said %s", a)
			} else {
				require.Len(t, ms, 1, "the message is stored; the client said %s", a)
				assert.Equal(t, key, ms[0].Key)
				assert.Equal(t, text, ms[0].Text)
			}
			assert.Equal(t, c.code, a.code, "%s", a)
			switch a.code {
			case 0:
				got := decodeReceipt(t, result{Stdout: []byte(a.stdout), Stderr: []byte(a.stderr)})
				assert.Equal(t, c.outcome, got.Outcome, "%s", a)
				require.Len(t, ms, 1, "a receipt names a stored message; the client said %s", a)
				assert.Equal(t, ms[0].ID, got.Outbox.ID)
				m := l.outboxShow(t, got.Outbox.ID)
				if got.Outcome == "stored" {
					assert.Equal(t, "stored", m.State, "the client said stored: %s", a)
					assert.Contains(t, got.Detail, "interrupted before anything was sent")
					assert.Zero(t, enqueuedCount(t, s.TranscriptPath(), text), "the client said stored, and nothing arrived yet")
				} else {
					assert.Equal(t, "delivered", m.State, "the client said %s: %s", got.Outcome, a)
					assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text), "the client said %s", got.Outcome)
				}
			case 12:
				assert.Contains(t, a.stderr, "outcome_unknown")
				assert.Contains(t, a.stderr, c.look, "what to look at")
				assert.NotContains(t, a.stderr, "nothing was stored")
			case 13:
				assert.Contains(t, a.stderr, "outbox_unavailable")
				assert.Contains(t, a.stderr, "nothing was stored")
				assert.Contains(t, a.stderr, "the request ended before its message was stored (terminated signal received)")
				assert.Empty(t, ms, "the client said nothing was stored")
			}

			// The service again (the release build): a stored message is
			// delivered, once; one never stored never arrives.
			l.start(t)
			if c.stored {
				eventually(t, 240*time.Second, "the message to be delivered", func() bool { return l.outboxShow(t, ms[0].ID).State == "delivered" })
				eventually(t, 60*time.Second, "the enqueue line", func() bool { return enqueuedCount(t, s.TranscriptPath(), text) > 0 })
			}
			want := 0
			if c.stored {
				want = 1
			}
			assert.Equal(t, want, enqueuedCount(t, s.TranscriptPath(), text), "nothing lost, nothing twice; the client said %s; log: %s", a, l.log)
			assert.Len(t, l.outboxAll(t), want)
		})
	}
}

// sigWord is sig's name without SIG: KILL, TERM.
func sigWord(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "KILL"
	}
	return "TERM"
}
