package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
)

// state is the page's data as /api/state gives it now.
func state(t *testing.T, d *Dashboard) State {
	t.Helper()
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code)
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	return st
}

// hostOf is the host view named name in st (the zero one when none).
func hostOf(st State, name string) HostView {
	for _, h := range st.Hosts {
		if h.Host == name {
			return h
		}
	}
	return HostView{}
}

// sessionsOf are the ids of host's sessions in st.
func sessionsOf(st State, host string) []string {
	var out []string
	for _, s := range st.Sessions {
		if s.Host == host {
			out = append(out, s.SessionID)
		}
	}
	return out
}

func hostWith(name string, ids ...string) HostListing {
	h := HostListing{Host: name}
	for _, id := range ids {
		h.Sessions = append(h.Sessions, wire.Session{Host: name, SessionID: id, Name: id, Verdict: "live", Status: "idle"})
	}
	return h
}

// TestAHostThatHangsHoldsUpNoOther: while one host's listing hangs, this
// machine's sessions keep updating (within a second), and the hung host's
// last good listing stays shown, marked stale with when it was last seen,
// until it answers again.
func TestAHostThatHangsHoldsUpNoOther(t *testing.T) {
	f := &fake{hosts: []HostListing{hostWith("", "here-1"), hostWith("slow", "far-1")}}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Every: 20 * time.Millisecond, Stale: 200 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { d.Run(ctx) })
	d.mu.Lock()
	d.readers++ // a page listens: Run reads every Every
	d.mu.Unlock()

	require.Eventually(t, func() bool { return len(sessionsOf(state(t, d), "slow")) == 1 }, 5*time.Second, 10*time.Millisecond)
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	f.mu.Lock()
	f.block = map[string]chan struct{}{"slow": release}
	n := f.reads["slow"]
	f.mu.Unlock()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.reads["slow"] > n }, 5*time.Second, 5*time.Millisecond, "the hanging read began")

	f.setHosts([]HostListing{hostWith("", "here-1", "here-2"), hostWith("slow", "far-1", "far-2")})
	start := time.Now()
	// The hung read never ends by itself: a refresh that waited for every
	// host would never show it. 10 s: room for a loaded machine.
	require.Eventually(t, func() bool { return len(sessionsOf(state(t, d), ".")) == 2 }, 10*time.Second, 5*time.Millisecond,
		"this machine's new session while a host hangs")
	t.Logf("this machine's change showed after %s", time.Since(start))

	var st State
	require.Eventually(t, func() bool { st = state(t, d); return hostOf(st, "slow").Stale }, 5*time.Second, 10*time.Millisecond, "the hung host marked stale")
	slow := hostOf(st, "slow")
	assert.Equal(t, []string{"far-1"}, sessionsOf(st, "slow"), "its last good listing stays shown")
	assert.True(t, slow.Reachable, "it has not failed, it is late")
	assert.NotEmpty(t, slow.SeenAt, "when it was last seen")
	assert.NotEmpty(t, slow.ListingSince, "since when its read runs")
	for _, s := range st.Sessions {
		assert.Equal(t, s.Host == "slow", s.Stale, s.SessionID)
	}
	assert.False(t, hostOf(st, ".").Stale)

	f.mu.Lock()
	f.block = nil
	f.mu.Unlock()
	close(release)
	require.Eventually(t, func() bool { st = state(t, d); return len(sessionsOf(st, "slow")) == 2 }, 5*time.Second, 10*time.Millisecond, "its next answer")
	assert.False(t, hostOf(st, "slow").Stale)
	assert.Empty(t, hostOf(st, "slow").ListingSince)
}

// TestTheFirstDataDoesNotWaitForAHungHost: the page's first data comes
// after at most firstWait even when a host never answers; that host shows
// as being listed, this machine's sessions are there.
func TestTheFirstDataDoesNotWaitForAHungHost(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	f := &fake{hosts: []HostListing{hostWith("", "here-1"), hostWith("hung")}, block: map[string]chan struct{}{"hung": never}}
	d := newTest(t, f)
	start := time.Now()
	st := state(t, d)
	// The hung host never answers: without the bound this would not return.
	assert.Less(t, time.Since(start), firstWait+10*time.Second)
	assert.Equal(t, []string{"here-1"}, sessionsOf(st, "."))
	h := hostOf(st, "hung")
	assert.True(t, h.Pending)
	assert.False(t, h.Reachable)
	assert.False(t, h.Stale, "nothing seen yet to be stale")
}

// TestHostsKeepTheirLastErrorAndLastSuccess: a host that fails shows its
// error and when; once it lists again the error is its last error (with
// its time) beside the time it last listed; when it fails after a good
// listing, that listing stays shown, stale.
func TestHostsKeepTheirLastErrorAndLastSuccess(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	down := HostListing{Host: "box", Err: "host_unreachable: ssh box: connection refused"}
	f := &fake{hosts: []HostListing{hostWith(""), down}}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Now: clock})
	require.NoError(t, err)
	read := func() State {
		_, err := d.Data(t.Context())
		require.NoError(t, err)
		return state(t, d)
	}

	box := hostOf(read(), "box")
	assert.False(t, box.Reachable)
	assert.Equal(t, down.Err, box.Error)
	assert.Equal(t, down.Err, box.LastError)
	assert.Equal(t, "2026-03-01T10:00:00.000Z", box.LastErrorAt)
	assert.Empty(t, box.SeenAt, "never listed")
	assert.False(t, box.Stale)

	tick(time.Minute)
	f.setHosts([]HostListing{hostWith(""), hostWith("box", "b-1")})
	box = hostOf(read(), "box")
	assert.True(t, box.Reachable)
	assert.Empty(t, box.Error, "the current read listed it")
	assert.Equal(t, down.Err, box.LastError, "the last error is kept")
	assert.Equal(t, "2026-03-01T10:00:00.000Z", box.LastErrorAt)
	assert.Equal(t, "2026-03-01T10:01:00.000Z", box.SeenAt)

	tick(time.Minute)
	f.setHosts([]HostListing{hostWith(""), {Host: "box", Err: "host_unreachable: ssh box: timed out"}})
	st := read()
	box = hostOf(st, "box")
	assert.False(t, box.Reachable)
	assert.True(t, box.Stale)
	assert.Equal(t, "host_unreachable: ssh box: timed out", box.Error)
	assert.Equal(t, "2026-03-01T10:02:00.000Z", box.LastErrorAt)
	assert.Equal(t, "2026-03-01T10:01:00.000Z", box.SeenAt, "when it was last seen")
	assert.Equal(t, []string{"b-1"}, sessionsOf(st, "box"), "its last good listing, stale")
}

// TestSendResultIsMadeSafe: what a send gave (a reply's text, a detail,
// stderr) reaches the page escaped as the CLI prints it, newlines kept.
func TestSendResultIsMadeSafe(t *testing.T) {
	f := &fake{send: func(string, string, time.Duration) Result {
		return Result{Code: 9, Stderr: "peerctl: no_reply: \x1b[2Jgone\n",
			JSON: json.RawMessage(`{"ok":false,"outcome":"delivered","detail":"held by \u202eevil","elapsedMs":12,` +
				`"reply":{"text":"line 1\n\u001b]0;pwn\u0007line 2","fromName":"<b>x</b>\u001b[31m"},"refusal":{"reason":"no_reply","detail":"none\u001b[1m"}}`)}
	}}
	d := newTest(t, f)
	w := do(d, http.MethodPost, "/api/send", true, `{"address":"s","text":"q?","await":true}`, nil)
	require.Equal(t, http.StatusOK, w.Code)
	var res struct {
		Code   int    `json:"code"`
		Stderr string `json:"stderr"`
		JSON   struct {
			Detail    string `json:"detail"`
			ElapsedMs int64  `json:"elapsedMs"`
			Reply     struct {
				Text     string `json:"text"`
				FromName string `json:"fromName"`
			} `json:"reply"`
			Refusal struct {
				Reason string `json:"reason"`
				Detail string `json:"detail"`
			} `json:"refusal"`
		} `json:"json"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &res))
	assert.Equal(t, 9, res.Code)
	assert.Equal(t, `peerctl: no_reply: \x1b[2Jgone`+"\n", res.Stderr)
	assert.Equal(t, `held by \u202eevil`, res.JSON.Detail)
	assert.Equal(t, "line 1\n"+`\x1b]0;pwn\aline 2`, res.JSON.Reply.Text)
	assert.Equal(t, `<b>x</b>\x1b[31m`, res.JSON.Reply.FromName, "markup stays text: the page sets it with textContent")
	assert.Equal(t, `none\x1b[1m`, res.JSON.Refusal.Detail)
	assert.Equal(t, "no_reply", res.JSON.Refusal.Reason)
	assert.Equal(t, int64(12), res.JSON.ElapsedMs, "numbers as they were")
	assert.NotContains(t, w.Body.String(), `\u001b`)
}

// TestExposedAddressIsInTheData: bound beyond loopback, the page's data
// names the address, for the banner.
func TestExposedAddressIsInTheData(t *testing.T) {
	d, err := New(&fake{}, Options{Addr: testAddr, Token: testToken, Exposed: "0.0.0.0:4711"})
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:4711", state(t, d).Exposed)
	assert.Empty(t, state(t, newTest(t, &fake{})).Exposed)
}

// TestNoHomePathInTheData: every text of the data that can carry a path
// (a session's cwd, endpoint, address and what it waits on, a host's
// notes, a send's answer) shows the user's home as "~", in the state as
// in a send's result; a send to the address as shown goes to the
// session's endpoint.
func TestNoHomePathInTheData(t *testing.T) {
	const ep = "cc-peer:v1:7:p:/home/u/.claude/socks/7.sock"
	f := &fake{hosts: []HostListing{{Notes: []string{"warning: registry /home/u/.qwen/x is unreadable"}, Sessions: []wire.Session{{Harness: "claude-code",
		SessionID: "11111111-2222", PID: 7, Name: "p", Cwd: "/home/u/src/p", Status: "waiting", WaitingFor: "permission prompt: Bash(cat /home/u/.ssh/id_rsa)",
		Endpoint: ep, Addressable: true, Verdict: "live"}}}},
		send: func(address, _ string, _ time.Duration) Result {
			return Result{Code: 5, Stderr: "peerctl: delivery_failed: could not reach (dial unix /home/u/.claude/socks/7.sock: refused)\n",
				JSON: json.RawMessage(`{"ok":false,"detail":"uds:/home/u/.claude/socks/7.sock: gone","reply":{"text":"see /home/u/x"}}`)}
		}}
	d, err := New(f, Options{Addr: testAddr, Token: testToken, Home: "/home/u"})
	require.NoError(t, err)
	w := do(d, http.MethodGet, "/api/state", true, "", nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.NotContains(t, w.Body.String(), "/home/u/")
	var st State
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.Len(t, st.Sessions, 1)
	s := st.Sessions[0]
	assert.Equal(t, "~/src/p", s.Cwd)
	assert.Equal(t, "cc-peer:v1:7:p:~/.claude/socks/7.sock", s.Endpoint)
	assert.Equal(t, s.Endpoint, s.Address)
	assert.Equal(t, "permission prompt: Bash(cat ~/.ssh/id_rsa)", s.WaitingFor)
	assert.Equal(t, []string{"warning: registry ~/.qwen/x is unreadable"}, st.Hosts[0].Notes)

	body, err := json.Marshal(map[string]any{"address": s.Address, "text": "hi"})
	require.NoError(t, err)
	w = do(d, http.MethodPost, "/api/send", true, string(body), nil)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, []string{ep + "\x00hi"}, f.sent, "the endpoint as it is")
	assert.NotContains(t, strings.ReplaceAll(w.Body.String(), "see /home/u/x", ""), "/home/u/", "a reply's words stay as sent, nothing else")
	assert.Contains(t, w.Body.String(), "dial unix ~/.claude/socks/7.sock")
	assert.Contains(t, w.Body.String(), "uds:~/.claude/socks/7.sock: gone")
}

// TestSendSaysWhatIsWrongWithTheForm: a field of the wrong type is named
// with what it takes.
func TestSendSaysWhatIsWrongWithTheForm(t *testing.T) {
	d := newTest(t, &fake{})
	for body, want := range map[string]string{
		`{"address":"s","text":"t","await":"yes"}`: `"await" must be true or false, not a JSON string`,
		`{"address":7,"text":"t"}`:                 `"address" must be a string, not a JSON number`,
		`{"address":"s"}`:                          `address and text must not be empty`,
		`{`:                                        `want {"address": "...", "text": "...", "await": true|false}: unexpected EOF`,
	} {
		w := do(d, http.MethodPost, "/api/send", true, body, nil)
		assert.Equal(t, http.StatusBadRequest, w.Code, body)
		assert.Contains(t, w.Body.String(), want, body)
		assert.NotContains(t, w.Body.String(), "both given", body)
	}
}
