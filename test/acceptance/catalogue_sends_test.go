package acceptance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// catSend runs `send --transport socket` against config and returns what
// happened; the registry folder must be untouched.
func catSend(t *testing.T, config, sessions string, o runOpts, extra ...string) result {
	t.Helper()
	args := append([]string{"--config-dir", config, "send", "--transport", "socket"}, extra...)
	return catRun(t, sessions, o, args...)
}

// catPair is a registry for this process (record a.json-to-be, socket
// a.sock) and a second live sleeper (socket b.sock), with a listener on
// each socket; the records are the caller's to write.
type catPair struct {
	config, sessions, dir string
	other                 int
	la, lb                *socktest.Listener
}

func newCatPair(t *testing.T) catPair {
	t.Helper()
	p := catPair{dir: catSocketDir(t)}
	p.config, p.sessions = catRegistry(t)
	p.other, _ = testproc.KillableSleeper(t)
	p.la = socktest.Listen(t, filepath.Join(p.dir, "a.sock"), false)
	p.lb = socktest.Listen(t, filepath.Join(p.dir, "b.sock"), false)
	return p
}

// TestCatalogueSends: what can go wrong between reading the registry and
// delivering. Each row gives the exit code and a phrase of the refusal.
func TestCatalogueSends(t *testing.T) {
	self := os.Getpid()

	t.Run("target died between list and send", func(t *testing.T) {
		config, sessions := catRegistry(t)
		pid, kill := testproc.KillableSleeper(t)
		sock := filepath.Join(catSocketDir(t), "s.sock")
		l := socktest.Listen(t, sock, false)
		catWriteJSON(t, sessions, catFile(pid), catRecord(t, pid, "doomed", sock))
		live := catList(t, config, sessions, false)
		require.Len(t, live, 1)
		kill()
		for _, addr := range []string{"doomed", live[0].Endpoint, live[0].SessionID} {
			r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", addr, "hello")
			assert.Equal(t, 3, r.Code, "address %q: stderr %s", addr, r.Stderr)
			assert.Contains(t, string(r.Stderr), "not_live")
		}
		assert.Zero(t, l.Conns(), "nothing may be sent to a dead session's socket")
	})

	t.Run("name moved to another session between reads", func(t *testing.T) {
		p := newCatPair(t)
		config, sessions, other, dir, la, lb := p.config, p.sessions, p.other, p.dir, p.la, p.lb
		a := catRecord(t, self, "alpha", filepath.Join(dir, "a.sock"))
		b := catRecord(t, other, "beta", filepath.Join(dir, "b.sock"))
		catWriteJSON(t, sessions, catFile(self), a)
		catWriteJSON(t, sessions, catFile(other), b)
		ep := ""
		for _, e := range catList(t, config, sessions, false) {
			if e.Name == "alpha" {
				ep = e.Endpoint
			}
		}
		require.NotEmpty(t, ep)
		// The user renames: alpha becomes gamma, and the other session takes "alpha".
		a["name"], b["name"] = "gamma", "alpha"
		catWriteJSON(t, sessions, catFile(self), a)
		catWriteJSON(t, sessions, catFile(other), b)
		r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", ep, "for alpha as I listed it")
		assert.Equal(t, 4, r.Code, "stderr %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "identity_mismatch")
		assert.Contains(t, string(r.Stderr), `now named "gamma"`)
		assert.Zero(t, la.Conns()+lb.Conns(), "a moved name must not deliver anywhere")
	})

	// A record whose "name" key is followed by a "Name" key: Claude Code
	// (JSON.parse) reads keys exactly, so both sessions are named "alpha"
	// to it and to the courier's ListAgents; peerctl must read it alike
	// and refuse the shared name, not take "Name" for the name.
	t.Run("a record spells its name twice, in two cases", func(t *testing.T) {
		p := newCatPair(t)
		config, sessions, other, dir, la, lb := p.config, p.sessions, p.other, p.dir, p.la, p.lb
		catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "alpha", filepath.Join(dir, "a.sock")))
		b := catRecord(t, other, "", filepath.Join(dir, "b.sock"))
		delete(b, "name")
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		catWrite(t, sessions, catFile(other), append([]byte(`{"name":"alpha","Name":"beta",`), raw[1:]...))
		names := map[string]int{}
		for _, e := range catList(t, config, sessions, false) {
			names[e.Name]++
		}
		assert.Equal(t, map[string]int{"alpha": 2}, names, "both records are named alpha, as Claude Code reads them")
		r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", "alpha", "hello")
		assert.Equal(t, 4, r.Code, "stderr %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "identity_mismatch")
		r = catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", "beta", "hello")
		assert.NotEqual(t, 0, r.Code, "no session is named beta: stderr %s", r.Stderr)
		assert.Zero(t, la.Conns()+lb.Conns(), "nothing may be delivered")
	})

	// A record we call reused because its procStart, written as a number,
	// names another process: Claude Code compares only a string procStart,
	// so its listing (and the courier's) shows that record under the name.
	// Such a record carrying the target's name no longer matters (both
	// transports address the socket); publishing its socket still does.
	t.Run("a record Claude Code lists though we call it reused or malformed", func(t *testing.T) {
		for _, tc := range []struct {
			desc string
			set  func(map[string]any, string)
			code int
		}{
			{"it carries the name", func(r map[string]any, _ string) { r["name"] = "alpha" }, 0},
			{"it publishes the socket", func(r map[string]any, sock string) { r["messagingSocketPath"] = sock }, 4},
			// Malformed to us, but Claude Code reads the pid from the file
			// name and ignores a procStart that is not a string.
			{"its pid field is unusable and it carries the name", func(r map[string]any, _ string) { r["name"], r["pid"] = "alpha", "abc" }, 0},
			{"its procStart is not a string or number and it carries the name", func(r map[string]any, _ string) { r["name"], r["procStart"] = "alpha", true }, 0},
		} {
			t.Run(tc.desc, func(t *testing.T) {
				p := newCatPair(t)
				config, sessions, other, dir, la := p.config, p.sessions, p.other, p.dir, p.la
				catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "alpha", filepath.Join(dir, "a.sock")))
				b := catRecord(t, other, "beta", filepath.Join(dir, "b.sock"))
				b["procStart"] = 1
				tc.set(b, filepath.Join(dir, "a.sock"))
				catWriteJSON(t, sessions, catFile(other), b)
				r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", "alpha", "hello")
				assert.Equal(t, tc.code, r.Code, "stderr %s", r.Stderr)
				if tc.code == 0 {
					assert.Equal(t, 1, la.Conns())
					return
				}
				assert.Contains(t, string(r.Stderr), "Claude Code's own listing")
				assert.Zero(t, la.Conns()+p.lb.Conns())
			})
		}
	})

	// Two live records publishing one socket path: a post reaches
	// whichever process bound it, so neither is sent to; show warns.
	t.Run("two live records publish one socket", func(t *testing.T) {
		p := newCatPair(t)
		config, sessions, sock := p.config, p.sessions, filepath.Join(p.dir, "a.sock")
		catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "alpha", sock))
		catWriteJSON(t, sessions, catFile(p.other), catRecord(t, p.other, "beta", sock))
		for _, addr := range []string{"alpha", "beta"} {
			r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", addr, "hello")
			assert.Equal(t, 4, r.Code, "stderr %s", r.Stderr)
			assert.Contains(t, string(r.Stderr), "is published by 2 live records")
		}
		assert.Zero(t, p.la.Conns()+p.lb.Conns(), "nothing may be posted to a socket two sessions claim")
		r := catRun(t, sessions, runOpts{}, "--config-dir", config, "show", "alpha")
		assert.Equal(t, 0, r.Code, "stderr %s", r.Stderr)
		assert.Contains(t, string(r.Stdout)+string(r.Stderr), "is published by 2 live records: sending to it is refused")
	})

	// A record of another machine carrying the target's name: it never
	// stands in the way (the courier addresses the socket, not the name),
	// whether its pid runs here or not, and whether the send's fast path
	// reads it or skips it unread.
	t.Run("a foreign record carries the name", func(t *testing.T) {
		for _, tc := range []struct {
			desc    string
			running bool
			code    int
		}{{"its pid is not running here", false, 0}, {"its pid runs here", true, 0}} {
			t.Run(tc.desc, func(t *testing.T) {
				config, sessions := catRegistry(t)
				sock := filepath.Join(catSocketDir(t), "t.sock")
				l := socktest.Listen(t, sock, false)
				catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "target", sock))
				pid, kill := testproc.KillableSleeper(t)
				far := catRecord(t, pid, "target", "/tmp/cc-socks/far.sock")
				far["pidDomain"] = "linux:ffffffffffffffffffffffffffffffff:pid:[4026531836]"
				far["sessionId"] = "ffffffff-0000-4000-8000-00000000000f"
				if !tc.running {
					kill()
				}
				catWriteJSON(t, sessions, catFile(pid), far)
				// And one whose pid is gone, in both cases: it never counts,
				// whether the send reads it or skips it.
				gone, killGone := testproc.KillableSleeper(t)
				farGone := catRecord(t, gone, "target", "/tmp/cc-socks/gone.sock")
				killGone()
				farGone["pidDomain"], farGone["sessionId"] = far["pidDomain"], "eeeeeeee-0000-4000-8000-00000000000e"
				catWriteJSON(t, sessions, catFile(gone), farGone)
				r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", "target", "hello")
				assert.Equal(t, tc.code, r.Code, "stderr %s", r.Stderr)
				assert.Equal(t, 1, l.Conns())
			})
		}
	})

	// A record of an exited, unreaped process (a zombie) carrying the
	// target's name: we call it stale; whatever its procStart, it does not
	// stand in the way.
	t.Run("a zombie's record carries the name", func(t *testing.T) {
		for _, tc := range []struct {
			desc      string
			procStart string // "" keeps the zombie's own
			code      int
		}{{"its own procStart", "", 0}, {"another process's procStart", "1", 0}} {
			t.Run(tc.desc, func(t *testing.T) {
				config, sessions := catRegistry(t)
				sock := filepath.Join(catSocketDir(t), "t.sock")
				l := socktest.Listen(t, sock, false)
				catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "target", sock))
				zombie := exec.Command("sleep", "600")
				require.NoError(t, zombie.Start())
				t.Cleanup(func() { _ = zombie.Process.Kill(); _ = zombie.Wait() })
				rec := catRecord(t, zombie.Process.Pid, "target", "/tmp/cc-socks/z.sock")
				if tc.procStart != "" {
					rec["procStart"] = tc.procStart
				}
				catWriteJSON(t, sessions, catFile(zombie.Process.Pid), rec)
				require.NoError(t, zombie.Process.Kill()) // not reaped: a zombie
				require.Eventually(t, func() bool {
					b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(zombie.Process.Pid), "stat"))
					return err == nil && strings.Contains(string(b), ") Z ")
				}, 10*time.Second, 10*time.Millisecond)
				r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "--no-confirm", "target", "hello")
				assert.Equal(t, tc.code, r.Code, "stderr %s", r.Stderr)
				assert.Equal(t, 1, l.Conns())
			})
		}
	})

	// Rows on one live record (this test process) whose socket is broken.
	rows := []struct {
		desc   string
		socket func(t *testing.T) string // returns the record's socket path
		extra  []string                  // more send flags
		code   int
		phrase string
		bound  time.Duration // when set, the run must end within it
	}{
		{desc: "socket path absent on disk", code: 5, phrase: "does not exist", socket: func(t *testing.T) string {
			return filepath.Join(catSocketDir(t), "gone.sock")
		}},
		{desc: "socket path is a regular file", code: 5, phrase: "not a socket", socket: func(t *testing.T) string {
			p := filepath.Join(catSocketDir(t), "file.sock")
			require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
			return p
		}},
		{desc: "socket path is a folder", code: 5, phrase: "not a socket", socket: func(t *testing.T) string {
			p := filepath.Join(catSocketDir(t), "dir.sock")
			require.NoError(t, os.Mkdir(p, 0o700))
			return p
		}},
		{desc: "socket with no listener", code: 5, phrase: "connection refused", socket: func(t *testing.T) string {
			p := filepath.Join(catSocketDir(t), "dead.sock")
			socktest.Dead(t, p)
			return p
		}},
		{desc: "listener that never closes (the frame was written)", code: 12, phrase: "did not close", extra: []string{"--timeout", "2s"}, bound: 20 * time.Second,
			socket: func(t *testing.T) string {
				p := filepath.Join(catSocketDir(t), "hold.sock")
				socktest.Listen(t, p, true)
				return p
			}},
		{desc: "Windows pipe path", code: 7, phrase: "not an absolute path", socket: func(t *testing.T) string { return `\\.\pipe\x` }},
		{desc: "no socket path (Claude Code 2.1.224)", code: 7, phrase: "not_addressable", socket: func(t *testing.T) string { return "" }},
	}
	for _, row := range rows {
		t.Run(row.desc, func(t *testing.T) {
			config, sessions := catRegistry(t)
			catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "target", row.socket(t)))
			args := append([]string{"--timeout", "5s"}, row.extra...)
			r := catSend(t, config, sessions, runOpts{}, append(args, "target", "hello")...)
			assert.Equal(t, row.code, r.Code, "stderr %s", r.Stderr)
			assert.Contains(t, string(r.Stderr), row.phrase)
			assert.Empty(t, r.Stdout)
			if row.bound > 0 {
				assert.Less(t, r.Elapsed, row.bound, "--timeout must bound the send")
			}
		})
	}

	t.Run("socket path longer than a Unix socket address", func(t *testing.T) {
		config, sessions := catRegistry(t)
		dir := catSocketDir(t)
		long := filepath.Join(dir, strings.Repeat("s", 150)+".sock")
		require.Greater(t, len(long), domain.MaxSocketPath)
		// A listener where a truncating sender would land.
		l := socktest.Listen(t, long[:domain.MaxSocketPath], false)
		catWriteJSON(t, sessions, catFile(self), catRecord(t, self, "longsock", long))
		r := catSend(t, config, sessions, runOpts{}, "--timeout", "5s", "longsock", "hello")
		assert.Equal(t, 5, r.Code, "stderr %s", r.Stderr)
		assert.Contains(t, string(r.Stderr), "not truncated")
		assert.Contains(t, string(r.Stderr), strconv.Itoa(len(long))+" bytes")
		assert.Zero(t, l.Conns(), "the truncated path must never be dialled")
	})
}
