//go:build unix

package acceptance

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/ports/transporttest"
	"github.com/peerctl/peerctl/test/liveopencode"
)

// TestLiveOpencodeListenerIdentity (issue 41): a real opencode-ai 1.18.33
// server bound to 127.0.0.2 or to ::1, with and without a password, beside
// an impostor of another Unix user (uid 65534 when the test runs as root)
// listening on 127.0.0.1 at the same port. peerctl lists the session at
// the address the server bound and delivers the text there, byte for
// byte, and nothing at all reaches the impostor (it records every byte it
// receives), not the listing's requests, not the password, not the text.
// Against a password-protected server, a missing and a refused password
// are said as such, naming the server's address, in `list --all`, `send`
// and `doctor`. One server per case, the cases in parallel.
func TestLiveOpencodeListenerIdentity(t *testing.T) {
	bin := liveopencode.Require(t)
	peerctlBin(t)
	root := liveopencode.NewRoot(t, bin)
	// The first start of a home sets up its database: one server first,
	// alone, then the cases' servers in parallel.
	first := root.Serve(t, root.Workdir(t, "first"))
	first.Kill()
	const password = "pw-41-never-shown"
	for _, c := range []struct{ name, host, password string }{
		{"127.0.0.2", "127.0.0.2", ""},
		{"127.0.0.2 with a password", "127.0.0.2", password},
		{"::1", "::1", ""},
		{"::1 with a password", "::1", password},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			im := transporttest.ListenAsOther(t, "127.0.0.1:0")
			defer func() {
				assert.Empty(t, im.Received(), "the impostor at %s (pid %d, uid %d) received bytes", im.Addr, im.PID, im.UID)
			}()
			_, portText, err := net.SplitHostPort(im.Addr)
			require.NoError(t, err)
			port, err := strconv.Atoi(portText)
			require.NoError(t, err)
			var extra []string
			if c.password != "" {
				extra = append(extra, opencode.PasswordEnv+"="+c.password)
			}
			label := strings.NewReplacer(":", "6", ".", "-", " ", "-").Replace(c.name)
			srv := root.ServeOn(t, root.Workdir(t, label), c.host, port, extra...)
			require.Equal(t, net.JoinHostPort(c.host, portText), srv.Addr)
			api := srv.URL
			if c.password != "" {
				api = "http://" + url.UserPassword("opencode", c.password).String() + "@" + srv.Addr
			}
			sid := liveopencode.NewSession(t, api)
			env := root.Env(extra...)

			got := byPID(listOpencode(t, env), srv.PID)
			require.Len(t, got, 1, "%+v", got)
			assert.Equal(t, sid, got[0].SessionID)
			assert.Equal(t, srv.Addr, got[0].SocketPath, "listed at the address the server bound")
			require.True(t, got[0].Addressable, got[0].Unaddressable)

			text := fmt.Sprintf("for %s only, %d: \"quoted\" ünï", c.name, time.Now().UnixNano())
			out, r := sendCodex(t, env, "--confirm-timeout=90s", sid, text)
			require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			assert.Equal(t, "delivered", out.Outcome, out.Detail)
			var user string
			for _, m := range liveopencode.Messages(t, api, sid) {
				if m.Role == "user" && len(m.Texts) == 2 && m.Texts[1] == text {
					user = m.ID
				}
			}
			require.NotEmpty(t, user, "the session has the text byte for byte")
			if c.password == "" {
				return
			}
			// The turn runs to its answer before the next peerctl asks
			// (four servers' turns at once on a loaded machine: the
			// bound of a start, not of one turn).
			deadline := time.Now().Add(liveopencode.StartTimeout)
			for !answered(liveopencode.Messages(t, api, sid), user) {
				require.True(t, time.Now().Before(deadline), "no answer to %s in %s", user, liveopencode.StartTimeout)
				time.Sleep(250 * time.Millisecond)
			}

			for _, p := range []struct{ name, env, kind, says string }{
				{"a missing password", "", opencode.KindLocked, "asks for a password and peerctl has none"},
				{"a refused password", opencode.PasswordEnv + "=wrong-" + password, opencode.KindRefused, "refused peerctl's password"},
			} {
				t.Run(p.name+" is said, naming the server", func(t *testing.T) {
					penv := root.Env()
					if p.env != "" {
						penv = root.Env(p.env)
					}
					got := byPID(listOpencode(t, penv, "--all"), srv.PID)
					require.Len(t, got, 1, "%+v", got)
					assert.Equal(t, p.kind, got[0].Kind, "%+v", got[0])
					assert.Equal(t, "live", got[0].Verdict)
					assert.False(t, got[0].Addressable)
					assert.Contains(t, got[0].Unaddressable, p.says)
					assert.Contains(t, got[0].Unaddressable, srv.Addr)

					out, r := sendCodex(t, penv, sid, "not for a wrong password")
					assert.NotEqual(t, 0, r.Code)
					assert.Contains(t, out.Refusal.Detail, p.says, "send says why")
					assert.Contains(t, out.Refusal.Detail, srv.Addr, "send names the server")

					d := runPeerctl(t, runOpts{Env: penv}, "doctor")
					said := string(d.Stdout) + string(d.Stderr)
					assert.Contains(t, said, p.says, "doctor says why")
					assert.Contains(t, said, srv.Addr, "doctor names the server")
					for _, s := range [][]byte{r.Stdout, r.Stderr, d.Stdout, d.Stderr} {
						assert.NotContains(t, string(s), password, "the password is never shown")
					}
				})
			}
		})
	}
}
