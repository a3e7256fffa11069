//go:build unix

package acceptance

// peerctl serve against real Claude Code 2.1.332 (PEERCTL_LIVE=1), offline:
// one session (stopped and resumed once) shared by the subtests. A durable
// send to the stopped session arrives exactly once when it is resumed; the
// same --key twice is one message; kill -9 of the service mid-delivery,
// then a restart: nothing lost, nothing twice; a TTL expires; a second
// service and another uid are refused; a corrupt database is kept and
// reported while plain sends still work.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/adapters/servesock"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/testproc"
)

// liveServe is one state and runtime folder, its service, and the
// environment every peerctl of the test runs with.
type liveServe struct {
	env        []string
	state, run string
	srv        *exec.Cmd
	log        *testproc.Buffer
}

func newLiveServe(t testing.TB, configDir, bin string) *liveServe {
	l := &liveServe{state: t.TempDir(), run: catSocketDir(t)}
	l.env = append(courierEnv(t, configDir, bin), "XDG_STATE_HOME="+l.state, "XDG_RUNTIME_DIR="+l.run)
	t.Cleanup(l.kill)
	return l
}

func (l *liveServe) socket() string {
	return filepath.Join(l.run, "peerctl", servesock.SocketName(filepath.Join(l.state, "peerctl")))
}
func (l *liveServe) db() string { return filepath.Join(l.state, "peerctl", outbox.FileName) }

// start runs peerctl serve --idle-exit=0 in a process group of its own and
// waits until its socket answers.
func (l *liveServe) start(t testing.TB) { l.startWith(t, peerctlBin(t)) }

// startWith is start with the program bin and the variables more added to
// the service's environment.
func (l *liveServe) startWith(t testing.TB, bin string, more ...string) {
	l.srv = exec.Command(bin, "serve", "--idle-exit=0")
	l.srv.Env = append(slices.Clone(l.env), more...)
	l.log = &testproc.Buffer{}
	l.srv.Stderr = l.log
	l.srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.srv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the service's socket", func() bool {
		c, err := dialSocket(l.socket())
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
}

// kill ends the service's whole process group (its couriers too) with
// SIGKILL and reaps it.
func (l *liveServe) kill() {
	if l.srv == nil || l.srv.Process == nil {
		return
	}
	_ = syscall.Kill(-l.srv.Process.Pid, syscall.SIGKILL)
	_ = l.srv.Wait()
	l.srv = nil
}

func (l *liveServe) peerctl(t *testing.T, args ...string) result {
	t.Helper()
	return runPeerctl(t, runOpts{Env: l.env, Timeout: 180 * time.Second}, args...)
}

// message reads message id straight from the database (read-only).
func (l *liveServe) message(t *testing.T, id int64) ports.OutboxMessage {
	t.Helper()
	st, err := outbox.OpenReadOnly(context.Background(), l.db())
	require.NoError(t, err)
	defer st.Close()
	m, _, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	return m
}

// enqueuedCount counts the transcript's enqueue lines carrying text.
func enqueuedCount(t *testing.T, path, text string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	n := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		var line struct{ Operation, Content string }
		if json.Unmarshal(l, &line) == nil && line.Operation == "enqueue" && strings.Contains(line.Content, "\n"+text+"\n") {
			n++
		}
	}
	return n
}

func TestLiveServe(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	top := t // sessions started in a subtest live as long as the test
	root := livecc.NewRoot(t)
	s := livecc.Start(t, bin, livecc.Options{Root: root, Label: "reviewer", WaitSettled: true})
	l := newLiveServe(t, s.ConfigDir, bin)
	l.start(t)

	t.Run("a plain send goes through the warm courier with the same receipt", func(t *testing.T) {
		for i := range 2 {
			text := "peerctl serve warm check " + strconv.Itoa(i)
			r := l.peerctl(t, "send", "--json", "--confirm-timeout", "30s", "--from", "live-serve", s.SessionID, text)
			require.Equal(t, 0, r.Code, "stderr: %s\nlog: %s", r.Stderr, l.log)
			var got courierReceipt
			require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
			assert.Equal(t, "delivered", got.Outcome, got.ConfirmNote)
			assert.NotEmpty(t, got.MsgID)
			assert.True(t, enqueued(t, s.TranscriptPath(), "live-serve", text))
		}
	})

	t.Run("the same key twice is one message", func(t *testing.T) {
		text := "peerctl serve keyed " + strconv.FormatInt(time.Now().UnixNano(), 36)
		r := l.peerctl(t, "send", "--json", "--key", "live-key-1", "--confirm-timeout", "30s", s.SessionID, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		first := decodeReceipt(t, r)
		assert.Equal(t, "delivered", first.Outcome)
		assert.Equal(t, "delivered", first.Outbox.State)
		r = l.peerctl(t, "send", "--json", "--key", "live-key-1", s.SessionID, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		again := decodeReceipt(t, r)
		assert.Equal(t, first.Outbox.ID, again.Outbox.ID)
		assert.True(t, again.Outbox.Duplicate)
		assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text))
	})

	t.Run("a second service is refused", func(t *testing.T) {
		r := l.peerctl(t, "serve")
		assert.Equal(t, 1, r.Code)
		assert.Contains(t, string(r.Stderr), "another peerctl serve (pid "+strconv.Itoa(l.srv.Process.Pid)+")")
	})

	t.Run("a TTL expires with the last reason", func(t *testing.T) {
		r := l.peerctl(t, "send", "--json", "--durable=2s", "nobody-by-this-name", "never delivered")
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		id := decodeReceipt(t, r).Outbox.ID
		eventually(t, 60*time.Second, "the message to expire", func() bool { return l.message(t, id).State == domain.OutboxExpired })
		assert.Contains(t, l.message(t, id).Reason, "not_live")
	})

	t.Run("kill -9 mid-delivery, restart: none lost, none twice", func(t *testing.T) {
		l.kill()
		l.start(t) // a fresh service: its first send starts a courier, a wide window
		text := "peerctl serve crash check " + strconv.FormatInt(time.Now().UnixNano(), 36)
		client := exec.Command(peerctlBin(t), "send", "--json", "--durable", s.SessionID, text)
		client.Env = l.env
		require.NoError(t, client.Start())
		var id int64
		eventually(t, 60*time.Second, "the attempt to begin", func() bool {
			st, err := outbox.OpenReadOnly(context.Background(), l.db())
			if err != nil {
				return false
			}
			defer st.Close()
			ms, err := st.List(context.Background(), ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxDelivering}})
			if err != nil || len(ms) == 0 {
				return false
			}
			id = ms[0].ID
			return true
		})
		l.kill()
		_ = client.Wait()
		assert.Equal(t, domain.OutboxDelivering, l.message(t, id).State, "the crash left it delivering")
		l.start(t)
		eventually(t, 120*time.Second, "the message to be settled", func() bool { return l.message(t, id).State == domain.OutboxDelivered })
		assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text), "exactly once; log: %s", l.log)
	})

	t.Run("a durable send to a stopped session arrives once it is resumed", func(t *testing.T) {
		id, cwd := s.SessionID, s.Cwd
		s.Stop()
		text := "peerctl serve while you were away " + strconv.FormatInt(time.Now().UnixNano(), 36)
		r := l.peerctl(t, "send", "--json", "--durable=1h", "--wait=3m", "--key", "away-1", id, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		got := decodeReceipt(t, r)
		require.Equal(t, "stored", got.Outcome, "stdout: %s", r.Stdout)
		assert.Contains(t, got.Detail, "not_live")
		back := livecc.Start(top, bin, livecc.Options{Root: root, Cwd: cwd, Args: []string{"--resume", id}, WaitSettled: true})
		require.Equal(t, id, back.SessionID, "resumed under the same session id")
		eventually(t, 180*time.Second, "the stored message to be delivered", func() bool {
			return l.message(t, got.Outbox.ID).State.Handed()
		})
		// It waited (--wait): the session's take-up line is in the history.
		eventually(t, 240*time.Second, "the take-up to be recorded", func() bool {
			return l.message(t, got.Outbox.ID).State == domain.OutboxTakenUp
		})
		eventually(t, 60*time.Second, "the enqueue line", func() bool { return enqueuedCount(t, back.TranscriptPath(), text) > 0 })
		assert.Equal(t, 1, enqueuedCount(t, back.TranscriptPath(), text), "exactly once")
		s = back
	})

	t.Run("another uid is refused on the socket", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run a client as another uid")
		}
		dir, err := os.MkdirTemp("", "serve-other-uid")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o755))
		other := filepath.Join(dir, "peerctl")
		// Both programs: an outbox command runs as peerctl-mcp, from beside peerctl.
		for _, name := range []string{"peerctl", "peerctl-mcp"} {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(peerctlBin(t)), name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
		}
		run := func() (string, int) {
			c := exec.Command(other, "outbox", "retry", "1")
			c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_RUNTIME_DIR=" + l.run, "XDG_STATE_HOME=" + l.state} // this service's folder, so its socket
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			err := c.Run()
			code := 0
			if ee := new(exec.ExitError); err != nil {
				require.ErrorAs(t, err, &ee)
				code = ee.ExitCode()
			}
			return out.String(), code
		}
		// The 0700 folder keeps it from the socket.
		_, code := run()
		assert.NotEqual(t, 0, code)
		// With the folders opened, the peer credentials refuse it.
		for _, d := range []string{l.run, filepath.Dir(l.socket())} {
			require.NoError(t, os.Chmod(d, 0o755))
			t.Cleanup(func() { _ = os.Chmod(d, 0o700) })
		}
		require.NoError(t, os.Chmod(l.socket(), 0o777))
		out, code := run()
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "serves uid 0 only; the connection is from uid 65534")
		assert.Contains(t, l.log.String(), "refused a connection: uid 65534")
	})

	t.Run("a corrupt database is kept and reported; plain sends still work", func(t *testing.T) {
		c := newLiveServe(t, s.ConfigDir, bin)
		require.NoError(t, os.MkdirAll(filepath.Dir(c.db()), 0o700))
		junk := bytes.Repeat([]byte("not an outbox\n"), 500)
		require.NoError(t, os.WriteFile(c.db(), junk, 0o600))
		c.start(t)
		r := c.peerctl(t, "send", "--json", "--durable", s.SessionID, "never stored")
		assert.Equal(t, 13, r.Code, "stderr: %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "outbox_unavailable")
		assert.Contains(t, c.log.String(), "durable sends are refused")
		text := "peerctl serve plain beside a corrupt outbox"
		r = c.peerctl(t, "send", "--json", "--confirm-timeout", "30s", s.SessionID, text)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
		after, err := os.ReadFile(c.db())
		require.NoError(t, err)
		assert.Equal(t, junk, after)
	})
}

// A durable message to a session that is not there yet is handed over
// only once the session, started with that name, has settled: Claude Code
// holds a message posted while it starts (and released it later, while
// peerctl's outbox kept it held for good).
func TestLiveServeDurableWaitsForAStartingSession(t *testing.T) {
	bin := livecc.Require(t, KnownNewestClaudeCode)
	root := livecc.NewRoot(t)
	// The session was there before (its registry folder exists, and the
	// service watches it): it comes back as the record appears.
	livecc.Start(t, bin, livecc.Options{Root: root, Label: "before", Name: "comeback"}).Stop()
	l := newLiveServe(t, filepath.Join(root, "config"), bin)
	l.start(t)
	text := "peerctl serve once you are up " + strconv.FormatInt(time.Now().UnixNano(), 36)
	r := l.peerctl(t, "send", "--json", "--durable=1h", "--key", "comeback-1", "comeback", text)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	got := decodeReceipt(t, r)
	require.Equal(t, "stored", got.Outcome, "stdout: %s", r.Stdout)
	s := livecc.Start(t, bin, livecc.Options{Root: root, Label: "comeback", Name: "comeback"})
	eventually(t, 180*time.Second, "the stored message to be handed over", func() bool {
		return l.message(t, got.Outbox.ID).State.Handed()
	})
	m := l.message(t, got.Outbox.ID)
	t.Logf("message %d: %s (outcome %s): %s", m.ID, m.State, m.Outcome, m.Reason)
	assert.Contains(t, []domain.OutboxState{domain.OutboxDelivered, domain.OutboxTakenUp}, m.State,
		"not held: it was handed over once the session had settled (%s); log: %s", m.Reason, l.log)
	eventually(t, 60*time.Second, "the enqueue line", func() bool { return enqueuedCount(t, s.TranscriptPath(), text) > 0 })
	assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text), "exactly once")
}
