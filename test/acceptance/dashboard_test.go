//go:build unix

package acceptance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testbin"
)

// TestDashboardInTheBrowser: the page refuses a visit without the token,
// by another name (DNS rebinding) and a change from another origin; with
// the token it shows a hostile session name as text, a stored outbox
// message, and cancels it, which the outbox then says.
func TestDashboardInTheBrowser(t *testing.T) {
	b := newBrowser(t)
	w := newServeWorld(t)
	hostile := "<img src=x onerror=alert(1)>"
	w.addSession(t, hostile)
	u := startDashboard(t, w.env(t), "--config-dir", w.config)
	pu, err := url.Parse(u)
	require.NoError(t, err)
	base := "http://" + pu.Host + "/"

	// A message for a session that is not there: it waits in the outbox.
	r := w.peerctl(t, nil, "send", "--json", "--durable=1h", "reviewer", "look at PR 7")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	require.NotZero(t, id)

	// No token: refused.
	bodyText := `document.body.innerText`
	b.do(t, time.Minute, chromedp.Navigate(base))
	assert.Contains(t, eval[string](t, b, bodyText), "no token")
	// Another name for this address, with the token: misdirected, no cookie.
	b.do(t, time.Minute, chromedp.Navigate(strings.Replace(u, "127.0.0.1", "localhost", 1)))
	assert.Contains(t, eval[string](t, b, bodyText), "served as "+pu.Host+" only")
	b.do(t, time.Minute, chromedp.Navigate(base))
	assert.Contains(t, eval[string](t, b, bodyText), "no token", "the rebound name set no cookie")

	// With the token: the page, and the token gone from the address bar.
	b.do(t, time.Minute, chromedp.Navigate(u))
	assert.Equal(t, base, eval[string](t, b, `location.href`))
	b.until(t, time.Minute, "the hostile session as text", fmt.Sprintf(`document.getElementById("session-groups").textContent.includes(%q)`, hostile))
	assert.Zero(t, eval[int](t, b, `document.querySelectorAll("img").length`), "a session name became markup")
	b.until(t, time.Minute, "the stored message", fmt.Sprintf(`!!document.querySelector('#message-table tr[data-id="%d"] button.act-cancel')`, id))
	row := eval[string](t, b, fmt.Sprintf(`document.querySelector('#message-table tr[data-id="%d"]').textContent`, id))
	assert.Contains(t, row, "look at PR 7")
	assert.Contains(t, row, "stored")

	// Another page on this machine (same site, another origin) posts a
	// cancel with the browser's cookie: refused by its Origin.
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, `<!doctype html><p id=x>posting</p><script>
fetch(%q, {method: "POST", mode: "no-cors", credentials: "include", body: "{}"}).then(() => { document.getElementById("x").textContent = "posted" }, e => { document.getElementById("x").textContent = "failed " + e })
</script>`, fmt.Sprintf("%sapi/outbox/%d/cancel", base, id))
	}))
	defer evil.Close()
	b.do(t, time.Minute, chromedp.Navigate(evil.URL))
	b.until(t, time.Minute, "the other page's post", `document.getElementById("x").textContent !== "posting"`)
	assert.Equal(t, "stored", w.show(t, id).State, "a post from another origin changed the outbox")

	// Cancelled from the page: the outbox says so.
	b.do(t, time.Minute, chromedp.Navigate(base))
	sel := fmt.Sprintf(`#message-table tr[data-id="%d"] button.act-cancel`, id)
	b.until(t, time.Minute, "the cancel button", fmt.Sprintf(`!!document.querySelector(%q)`, sel))
	b.do(t, time.Minute, chromedp.Click(chromedp.CSS(sel)))
	eventually(t, time.Minute, "the message cancelled", func() bool { return w.show(t, id).State == "cancelled" })
	var list []outboxEntry
	r = w.peerctl(t, nil, "outbox", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	require.NoError(t, json.Unmarshal(r.Stdout, &list))
	require.Len(t, list, 1)
	assert.Equal(t, "cancelled", list[0].State)
	b.until(t, time.Minute, "the page showing it cancelled", fmt.Sprintf(`document.querySelector('#message-table tr[data-id="%d"]').textContent.includes("cancelled")`, id))
	assert.Empty(t, b.seenDialogs(), "a script ran: an alert opened")
}

// TestDashboardSendsWithTheServicesConfigDir: a service started with
// --config-dir (no CLAUDE_CONFIG_DIR in its environment, a HOME with no
// registry) lists the session of that folder, and a send typed into the
// page reaches it: the page's send carries the service's settings. The
// session's socket is under HOME: neither the page nor its data names
// that folder (it is "~"), and the send still goes to the socket.
func TestDashboardSendsWithTheServicesConfigDir(t *testing.T) {
	b := newBrowser(t)
	w := newServeWorld(t)
	home := filepath.Dir(w.sock)
	u := startDashboard(t, append(w.env(t), "HOME="+home), "--config-dir", w.config)
	b.do(t, time.Minute, chromedp.Navigate(u))
	b.until(t, time.Minute, "the session of the --config-dir folder", fmt.Sprintf(`!!document.querySelector('#session-groups tr[data-session=%q]')`, w.id))
	pick := `(() => { const sel = document.getElementById("send-to");
  const o = [...sel.options].find(o => o.textContent.includes("inbox ("));
  if (!o) return false; sel.value = o.value; return true })()`
	b.until(t, time.Minute, "the session among the send form's choices", pick)
	text := "sent from the page to the --config-dir session"
	b.do(t, time.Minute, chromedp.SendKeys(chromedp.CSS("#send-text"), text), chromedp.Click(chromedp.CSS("#send-button")))
	box := `document.querySelector("#send-results .result")`
	b.until(t, 3*time.Minute, "the send's receipt", box+` && !!`+box+`.querySelector(".receipt")`)
	got := eval[string](t, b, box+".textContent")
	assert.NotContains(t, got, "not_found", "the page's send did not see the folder's session: %s", got)
	frames := w.listener.Wait(1)
	require.Len(t, frames, 1, "the receipt: %s", got)
	assert.Contains(t, string(frames[0]), text)
	page := eval[string](t, b, `document.documentElement.outerHTML`)
	eval[bool](t, b, `(() => { fetch("/api/state").then(r => r.text()).then(s => { window.stateText = s }); return true })()`)
	b.until(t, time.Minute, "the page's data", `typeof window.stateText === "string"`)
	data := eval[string](t, b, `window.stateText`)
	for what, s := range map[string]string{"page": page, "data": data} {
		assert.NotContains(t, s, home, "the %s names the home", what)
	}
	assert.Contains(t, page, "~/in.sock", "the endpoint under the home")
	assert.Empty(t, b.seenDialogs())
}

// TestDashboardApprovesAHeldMessageOnce: a send the trust policy holds
// shows on the page awaiting approval, with the rule and its sender;
// Approve delivers it to the session exactly once (a second approve,
// from the page too, is wrong_state), and the page shows it delivered.
func TestDashboardApprovesAHeldMessageOnce(t *testing.T) {
	b := newBrowser(t)
	w := newPolicyServeWorld(t, []string{"--from", "cli", "--to", "*", "hold"})
	u := startDashboard(t, w.env(t), "--config-dir", w.config)
	text := "held until the page approves it"
	got := w.sendHeld(t, text)
	require.Equal(t, "awaiting_approval", got.Outbox.State)
	id := got.Outbox.ID
	b.do(t, time.Minute, chromedp.Navigate(u))
	row := fmt.Sprintf(`document.querySelector('#message-table tr[data-id="%d"]')`, id)
	b.until(t, time.Minute, "the held message with Approve", "!!"+row+` && !!`+row+`.querySelector("button.act-approve")`)
	shown := eval[string](t, b, row+".textContent")
	assert.Contains(t, shown, "awaiting_approval")
	assert.Contains(t, shown, "rule 1: hold from=cli to=*")
	assert.Equal(t, "cli", eval[string](t, b, row+`.querySelector("td.sender").textContent`))
	assert.Empty(t, w.listener.Frames(), "nothing reached the session before the approval")

	b.do(t, time.Minute, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#message-table tr[data-id="%d"] button.act-approve`, id))))
	eventually(t, 2*time.Minute, "the approved message delivered", func() bool { return w.show(t, id).State == "delivered" })
	b.until(t, time.Minute, "the page showing it delivered", row+` && `+row+`.querySelector(".badge").textContent === "delivered"`)
	require.True(t, eval[bool](t, b, fmt.Sprintf(`(() => { window.again = null;
  fetch("/api/outbox/%d/approve", {method: "POST", body: "{}"}).then(r => r.json()).then(j => { window.again = j.code }); return true })()`, id)))
	b.until(t, time.Minute, "the second approve's answer", `window.again !== null`)
	assert.Equal(t, 16, eval[int](t, b, `window.again`), "approved once: a second approve is wrong_state")
	frames := w.listener.Frames()
	require.Len(t, frames, 1, "delivered exactly once")
	assert.Contains(t, string(frames[0]), text)
	m := w.show(t, id)
	var states []string
	for _, h := range m.History {
		states = append(states, h.State)
	}
	assert.Equal(t, "awaiting_approval", states[0])
	assert.Contains(t, states, "delivered")
	assert.Empty(t, b.seenDialogs())
}

// TestDashboardShowsTheHosts: the hosts of the hosts file (reached by
// the fake ssh) are listed beside this machine with their sessions and
// the peerctl they run, as its hello named it; one that cannot be
// reached shows why.
func TestDashboardShowsTheHosts(t *testing.T) {
	w := newHostWorld(t)
	env := []string{"PATH=" + w.bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(t),
		"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + w.config,
		"PEERCTL_SSH=" + testbin.Build(t, testbin.FakeSSH), "FAKESSH_RECORD=" + w.record, "FAKESSH_DOWN=gone-box", "PEERCTL_HOST_TIMEOUT=10s"}
	for _, h := range []string{"box", "gone-box"} {
		r := runPeerctl(t, runOpts{Env: env}, "hosts", "add", h)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}
	r := runPeerctl(t, runOpts{Env: env}, "version", "--json")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	var v struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(r.Stdout, &v), "%s", r.Stdout)
	require.NotEmpty(t, v.Version)

	u := startDashboard(t, env)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, Timeout: time.Minute}
	res, err := client.Get(u)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	type host struct {
		Host      string `json:"host"`
		Reachable bool   `json:"reachable"`
		Error     string `json:"error"`
		Version   string `json:"version"`
		Live      int    `json:"live"`
	}
	var st struct {
		Hosts []struct {
			host
			Pending bool `json:"pending"`
		} `json:"hosts"`
		Sessions []struct {
			Host      string `json:"host"`
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	// Each machine is listed on its own: wait until each has answered.
	eventually(t, time.Minute, "every host's first answer", func() bool {
		res, err := client.Get(strings.TrimSuffix(u[:strings.Index(u, "?")], "/") + "/api/state")
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		st.Hosts, st.Sessions = nil, nil
		require.NoError(t, json.NewDecoder(res.Body).Decode(&st))
		for _, h := range st.Hosts {
			if h.Pending {
				return false
			}
		}
		return len(st.Hosts) == 3
	})
	require.Len(t, st.Hosts, 3, "this machine and the hosts file's two: %+v", st.Hosts)
	assert.Equal(t, host{Host: ".", Reachable: true, Version: v.Version, Live: 1}, st.Hosts[0].host)
	assert.Equal(t, host{Host: "box", Reachable: true, Version: v.Version, Live: 1}, st.Hosts[1].host, "the far side's peerctl, from its hello")
	assert.Equal(t, "gone-box", st.Hosts[2].Host)
	assert.False(t, st.Hosts[2].Reachable)
	assert.Contains(t, st.Hosts[2].Error, "host_unreachable")
	assert.Empty(t, st.Hosts[2].Version)
	var on []string
	for _, s := range st.Sessions {
		if s.SessionID == w.id {
			on = append(on, s.Host)
		}
	}
	assert.ElementsMatch(t, []string{".", "box"}, on, "the session, seen here and through box")
}

// TestDashboardPage: the page's own behaviour in the browser, over a
// backend the test sets (no service behind it).
func TestDashboardPage(t *testing.T) {
	b := newBrowser(t)
	open := func(t *testing.T, p *pageBackend, opt dashboard.Options) {
		t.Helper()
		b.do(t, time.Minute, chromedp.Navigate(servePage(t, p, opt)))
		b.until(t, time.Minute, "the first data", `!!document.body.dataset.at`)
	}
	stored := func(id int64, reason string) dashboard.Message {
		return dashboard.Message{ID: id, State: "stored", Address: "reviewer", Text: fmt.Sprintf("message %d", id), CreatedAt: "2026-03-01T10:00:00Z",
			UpdatedAt: "2026-03-01T10:00:00Z", History: []dashboard.Event{{At: "2026-03-01T10:00:00Z", State: "stored", Reason: reason}}}
	}

	// Focus and a text selection survive an update: a focused Cancel
	// button stays focused while the data changes around it, and when its
	// row moves (its node re-inserted) focus comes back to the same button.
	t.Run("focus and selection survive updates", func(t *testing.T) {
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "alpha")}, msgs: []dashboard.Message{stored(8, ""), stored(7, "")}}
		open(t, p, dashboard.Options{Every: 100 * time.Millisecond})
		btn := `document.querySelector('#message-table tr[data-id="7"] button.act-cancel')`
		b.until(t, time.Minute, "the Cancel button of message 7", "!!"+btn)
		require.True(t, eval[bool](t, b, `(() => { const b = `+btn+`; b.focus(); window.focused = b;
  const cwd = document.querySelector('#session-groups tr[data-session="alpha-id"] td.cwd');
  const r = document.createRange(); r.selectNodeContents(cwd); getSelection().removeAllRanges(); getSelection().addRange(r);
  return document.activeElement === b && getSelection().toString() === "/src/alpha" })()`))

		p.set(func(p *pageBackend) { p.hosts = []dashboard.HostListing{pageHost("", "alpha", "beta")} })
		b.until(t, time.Minute, "the update (a new session)", `!!document.querySelector('#session-groups tr[data-session="beta-id"]')`)
		assert.True(t, eval[bool](t, b, `document.activeElement === window.focused`), "the focused button was replaced: focus on %s",
			eval[string](t, b, `document.activeElement.tagName + " " + (document.activeElement.getAttribute("aria-label") || "")`))
		assert.Equal(t, "/src/alpha", eval[string](t, b, `getSelection().toString()`), "the selection survives")

		p.set(func(p *pageBackend) {
			// Newest first, by when each was made: 7 made later moves up.
			seven := stored(7, "not_live: reviewer is away")
			seven.CreatedAt = "2026-03-01T10:05:00Z"
			p.msgs = []dashboard.Message{seven, stored(8, "")}
		})
		b.until(t, time.Minute, "message 7 moved up", `document.querySelector('#message-table tbody tr').dataset.id === "7"`)
		assert.Equal(t, "Cancel message 7", eval[string](t, b, `document.activeElement.getAttribute("aria-label") || document.activeElement.tagName`), "focus back on the same control")
	})

	// A host whose listing hangs: this machine's sessions keep updating,
	// the host's last good listing stays, marked stale with when it was
	// last seen, until it answers.
	t.Run("a hung host is shown stale and holds up nothing", func(t *testing.T) {
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "alpha"), pageHost("slow-box", "far")}}
		open(t, p, dashboard.Options{Every: 200 * time.Millisecond, Stale: 500 * time.Millisecond})
		b.until(t, time.Minute, "the slow host's session", `!!document.querySelector('#session-groups tr[data-session="far-id"]')`)
		release := make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		var n int
		p.set(func(p *pageBackend) { p.block, n = map[string]chan struct{}{"slow-box": release}, p.reads["slow-box"] })
		eventually(t, time.Minute, "the hanging read began", func() bool {
			var got int
			p.set(func(p *pageBackend) { got = p.reads["slow-box"] })
			return got > n
		})
		p.set(func(p *pageBackend) {
			p.hosts = []dashboard.HostListing{pageHost("", "alpha", "beta"), pageHost("slow-box", "far", "far2")}
		})
		// The hung read never ends by itself here: a refresh that waited
		// for every host would show nothing new until it was released.
		// Within 20 s, well under the old 30 s bound of a refresh, so that
		// a loaded machine does not fail it; the time is logged.
		took := b.until(t, 20*time.Second, "this machine's new session while a host hangs", `!!document.querySelector('#session-groups tr[data-session="beta-id"]')`)
		t.Logf("this machine's new session showed after %s while a host hung", took)
		group := `document.querySelector('#session-groups [data-key="host slow-box"]')`
		b.until(t, time.Minute, "the hung host marked stale", group+`.textContent.includes("stale")`)
		assert.Contains(t, eval[string](t, b, group+".textContent"), "last seen")
		assert.True(t, eval[bool](t, b, `document.querySelector('#session-groups tr[data-session="far-id"]').classList.contains("stale")`))
		assert.False(t, eval[bool](t, b, `!!document.querySelector('#session-groups tr[data-session="far2-id"]')`), "nothing new from the hung host")
		close(release)
		p.set(func(p *pageBackend) { p.block = nil })
		b.until(t, time.Minute, "its next answer", `!!document.querySelector('#session-groups tr[data-session="far2-id"]') && !`+group+`.textContent.includes("stale")`)
	})

	// Hosts: a host's last error stays shown, with its time, after it
	// lists again, beside when it last listed.
	t.Run("hosts keep their last error", func(t *testing.T) {
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost(""), {Host: "flaky", Err: "host_unreachable: ssh flaky: connection refused"}}}
		open(t, p, dashboard.Options{Every: 100 * time.Millisecond})
		row := `[...document.querySelectorAll('#host-table tbody tr')].find(r => r.dataset.key === "flaky")`
		b.until(t, time.Minute, "the failing host", "!!"+row+` && `+row+`.textContent.includes("connection refused")`)
		p.set(func(p *pageBackend) { p.hosts = []dashboard.HostListing{pageHost(""), pageHost("flaky", "f1")} })
		b.until(t, time.Minute, "the host listing again", row+`.textContent.includes("last error")`)
		got := eval[string](t, b, row+".textContent")
		assert.Contains(t, got, "last error")
		assert.Contains(t, got, "connection refused", "the last error kept: %s", got)
		assert.Contains(t, got, "ok")
	})

	// The receipt chain shows every step with its reason and time.
	// Times are shown as the CLI prints them for people (UTC, RFC 3339 to
	// the second), one form, whatever the browser's own time zone.
	t.Run("each step of the receipt chain with its reason and time", func(t *testing.T) {
		_, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"})
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{})
		})
		m := dashboard.Message{ID: 3, State: "delivered", Address: "reviewer", Text: "look", CreatedAt: "2026-03-01T10:00:00Z", UpdatedAt: "2026-03-01T10:02:00Z",
			History: []dashboard.Event{{At: "2026-03-01T10:00:00Z", State: "stored"}, {At: "2026-03-01T10:01:00Z", State: "stored", Reason: "not_live: reviewer is away"},
				{At: "2026-03-01T10:01:30Z", State: "delivering"}, {At: "2026-03-01T10:02:00Z", State: "delivered", Reason: "the harness took it (queued)"}}}
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("")}, msgs: []dashboard.Message{m}}
		open(t, p, dashboard.Options{})
		steps := `[...document.querySelectorAll('#message-table tr[data-id="3"] .chain li')]`
		b.until(t, time.Minute, "the chain", steps+`.length === 3`)
		got := eval[[]string](t, b, steps+`.map(li => li.textContent)`)
		require.Len(t, got, 3)
		assert.Contains(t, got[0], "not_live: reviewer is away", "the first step's reason (folded: stored ×2)")
		assert.Contains(t, got[0], "×2")
		assert.Contains(t, got[2], "the harness took it (queued)")
		for i, at := range []string{"2026-03-01T10:01:00Z", "2026-03-01T10:01:30Z", "2026-03-01T10:02:00Z"} {
			assert.Contains(t, got[i], " "+at, "step %d's time", i)
		}
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, eval[string](t, b, `document.getElementById("read-at").textContent`), "when the data was read")
	})

	// Messages read easily: a long reason is one line that opens on
	// demand (and stays open across updates), the reply is the largest
	// text of its row, each message names its sender, a plain send its
	// msg_id, and the user's home is "~" in reasons.
	t.Run("messages read easily", func(t *testing.T) {
		long := "not_live: no live session named \"reviewer\" in /home/u/.claude/sessions (and 3 stale records: pids 11, 12, 13 are gone); " +
			"it is tried again when the session is back or at the next backoff"
		replied := dashboard.Message{ID: 9, State: "replied", Address: "reviewer", Text: "are the tests green?",
			Sender:    &wire.Sender{Entrance: "mcp", SessionName: "reviewer-1", As: "mcp:reviewer-1"},
			CreatedAt: "2026-03-01T10:00:00Z", UpdatedAt: "2026-03-01T10:03:00Z", History: []dashboard.Event{
				{At: "2026-03-01T10:00:00Z", State: "stored", Reason: long}, {At: "2026-03-01T10:02:00Z", State: "delivering"},
				{At: "2026-03-01T10:02:01Z", State: "delivered", Reason: "the harness took it (queued)"},
				{At: "2026-03-01T10:03:00Z", State: "replied", Reason: wire.RepliedReason("reviewer", "yes, all green on main")}}}
		plain := dashboard.Message{State: "delivered", Address: "web", Text: "from the page", Sender: &wire.Sender{Entrance: "dashboard", As: "dashboard"}, MsgID: "c0ffee12-3456-7890",
			CreatedAt: "2026-03-01T10:04:00Z", UpdatedAt: "2026-03-01T10:04:01Z", History: []dashboard.Event{{At: "2026-03-01T10:04:00Z", State: "sent"},
				{At: "2026-03-01T10:04:01Z", State: "delivered", Reason: "the harness took it (queued)"}}}
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "reviewer")}, msgs: []dashboard.Message{plain, replied}}
		open(t, p, dashboard.Options{Every: 100 * time.Millisecond, Home: "/home/u"})
		row := `document.querySelector('#message-table tr[data-id="9"]')`
		b.until(t, time.Minute, "the replied message", "!!"+row)
		details := row + `.querySelector(".chain details.reason")`
		require.True(t, eval[bool](t, b, "!!"+details), "the long reason is collapsed: %s", eval[string](t, b, row+".innerHTML"))
		assert.False(t, eval[bool](t, b, details+".open"))
		summary := details + `.querySelector("summary")`
		lineHeight := eval[float64](t, b, `parseFloat(getComputedStyle(`+summary+`).lineHeight) || 20`)
		assert.LessOrEqual(t, eval[float64](t, b, summary+`.getBoundingClientRect().height`), 1.5*lineHeight, "one line")
		assert.NotContains(t, eval[string](t, b, row+".innerText"), "next backoff", "the rest is not shown")
		assert.Contains(t, eval[string](t, b, row+".textContent"), "~/.claude/sessions")
		assert.NotContains(t, eval[string](t, b, row+".textContent"), "/home/u/")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="9"] .chain details.reason summary`)))
		b.until(t, time.Minute, "the whole reason", row+`.innerText.includes("next backoff")`)
		// An update redraws the table: the reason the user opened stays open.
		p.set(func(p *pageBackend) { p.msgs[0].Text = "from the page, edited" })
		b.until(t, time.Minute, "the update", `document.getElementById("message-table").textContent.includes("edited")`)
		assert.True(t, eval[bool](t, b, details+".open"), "still open after an update")

		// The reply: shown on its own, the largest text of its row.
		reply := row + `.querySelector(".reply-text")`
		require.True(t, eval[bool](t, b, "!!"+reply))
		assert.Equal(t, "yes, all green on main", eval[string](t, b, reply+".textContent"))
		assert.True(t, eval[bool](t, b, `(() => { const r = `+row+`; const rs = parseFloat(getComputedStyle(`+reply+`).fontSize);
  const w = document.createTreeWalker(r, NodeFilter.SHOW_TEXT); let max = 0;
  for (let n = w.nextNode(); n; n = w.nextNode()) if (n.nodeValue.trim() && !`+reply+`.contains(n) && n.parentElement.getClientRects().length)
    max = Math.max(max, parseFloat(getComputedStyle(n.parentElement).fontSize));
  return rs >= max })()`), "the reply is not smaller than any other text of its row")

		// Senders, and the plain send's id.
		assert.Equal(t, "mcp:reviewer-1", eval[string](t, b, row+`.querySelector("td.sender").textContent`))
		prow := `document.querySelector('#message-table tr[data-id="0"]')`
		assert.Equal(t, "dashboard", eval[string](t, b, prow+`.querySelector("td.sender").textContent`))
		id := eval[string](t, b, prow+`.querySelector("td").textContent`)
		assert.Contains(t, id, "c0ffee12")
		assert.NotEqual(t, "send", id)
		assert.Equal(t, []string{"id", "from", "to", "state", "receipts", "text", "updated", ""},
			eval[[]string](t, b, `[...document.querySelectorAll("#message-table thead th")].map(th => th.textContent)`))
	})

	// A message the trust policy holds shows Approve and Deny, and the
	// rule that held it; each button asks the backend once.
	t.Run("a held message has Approve and Deny", func(t *testing.T) {
		held := func(id int64) dashboard.Message {
			m := stored(id, "held by the trust policy")
			m.State = "awaiting_approval"
			return m
		}
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("")}, msgs: []dashboard.Message{held(12), held(11), stored(10, "")}}
		open(t, p, dashboard.Options{})
		row := func(id int) string {
			return fmt.Sprintf(`document.querySelector('#message-table tr[data-id="%d"]')`, id)
		}
		b.until(t, time.Minute, "the held messages' buttons", "!!"+row(11)+` && !!`+row(11)+`.querySelector("button.act-approve")`)
		assert.True(t, eval[bool](t, b, "!!"+row(12)+`.querySelector("button.act-deny")`))
		assert.False(t, eval[bool](t, b, "!!"+row(10)+`.querySelector("button.act-approve, button.act-deny")`), "a stored message has none")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="11"] button.act-approve`)))
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="12"] button.act-deny`)))
		eventually(t, time.Minute, "both asked", func() bool { return len(p.retriedIDs()) == 2 })
		assert.ElementsMatch(t, []string{"approve 11", "deny 12"}, p.retriedIDs())
		assert.Empty(t, b.seenDialogs())
	})

	// The send result: a reply and a detail from the far side shown as
	// escaped text; a send that awaited a reply and got none says no_reply.
	t.Run("send results are escaped and say no_reply", func(t *testing.T) {
		hostile := "<img src=x onerror=alert(1)>"
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "alpha")}, send: func(_, text string, _ time.Duration) dashboard.Result {
			if text == "no answer?" {
				return dashboard.Result{Code: 9, Stderr: "peerctl: no_reply: no reply within 2m\n",
					JSON: []byte(`{"ok":false,"outcome":"queued","transport":"courier","elapsedMs":5,"refusal":{"reason":"no_reply","detail":"no reply within 2m","exitCode":9}}`)}
			}
			return dashboard.Result{JSON: []byte(`{"ok":true,"outcome":"queued","transport":"courier","detail":"\u001b[31mred","elapsedMs":5,` +
				`"reply":{"text":"` + hostile + `\u001b]0;pwn\u0007","fromName":"alpha"}}`)}
		}}
		open(t, p, dashboard.Options{})
		b.until(t, time.Minute, "a session to send to", `document.getElementById("send-to").options.length > 0 && !!document.getElementById("send-to").value`)
		box := `document.querySelector("#send-results .result")`
		b.do(t, time.Minute, chromedp.SendKeys(chromedp.CSS("#send-text"), "no answer?"), chromedp.Click(chromedp.CSS("#send-await")), chromedp.Click(chromedp.CSS("#send-button")))
		b.until(t, time.Minute, "the receipt", box+` && !!`+box+`.querySelector(".receipt")`)
		assert.Equal(t, "no_reply", eval[string](t, b, box+`.querySelector(".receipt .badge").textContent`))
		assert.Contains(t, eval[string](t, b, box+".textContent"), "no reply within 2m")

		require.True(t, eval[bool](t, b, `(() => { document.getElementById("send-text").value = ""; return true })()`))
		b.do(t, time.Minute, chromedp.SendKeys(chromedp.CSS("#send-text"), "hi"), chromedp.Click(chromedp.CSS("#send-button")))
		b.until(t, time.Minute, "the reply", box+` && !!`+box+`.querySelector(".reply")`)
		assert.Equal(t, hostile+`\x1b]0;pwn\a`, eval[string](t, b, box+`.querySelector(".reply pre").textContent`))
		assert.Contains(t, eval[string](t, b, box+`.querySelector(".receipt").textContent`), `\x1b[31mred`)
		assert.Zero(t, eval[int](t, b, `document.querySelectorAll("img").length`))
		assert.Empty(t, b.seenDialogs())
	})

	// Bound beyond loopback, the page says so in a banner.
	t.Run("an exposed page says so", func(t *testing.T) {
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("")}}
		open(t, p, dashboard.Options{Exposed: "box.example:8080"})
		assert.False(t, eval[bool](t, b, `document.getElementById("exposed").hidden`))
		assert.Contains(t, eval[string](t, b, `document.getElementById("exposed").textContent`), "exposed on box.example:8080")
		open(t, &pageBackend{hosts: []dashboard.HostListing{pageHost("")}}, dashboard.Options{})
		assert.True(t, eval[bool](t, b, `document.getElementById("exposed").hidden`))
	})

	// Sessions: a host selector beside the free-text filter; a click on a
	// session's name shows its messages only.
	t.Run("host selector and a session's messages", func(t *testing.T) {
		msg := func(id int64, address, host, sessionID string) dashboard.Message {
			return dashboard.Message{ID: id, State: "delivered", Address: address, Host: host, SessionID: sessionID, Text: fmt.Sprint("text ", id),
				CreatedAt: "2026-03-01T10:00:00Z", UpdatedAt: "2026-03-01T10:00:00Z"}
		}
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "alpha", "beta"), pageHost("box", "alpha")},
			msgs: []dashboard.Message{msg(1, "alpha", "", "alpha-id"), msg(2, "beta", "", ""), msg(3, "alpha", "box", ""), msg(4, "alpha", "", "")}}
		open(t, p, dashboard.Options{})
		b.until(t, time.Minute, "both hosts in the selector", `document.getElementById("session-host").options.length === 3`)
		b.do(t, time.Minute, chromedp.SetValue(chromedp.CSS("#session-host"), "box"))
		require.True(t, eval[bool](t, b, `(() => { document.getElementById("session-host").dispatchEvent(new Event("input")); return true })()`))
		groups := `[...document.querySelectorAll('#session-groups .group')].map(g => g.dataset.key)`
		assert.Equal(t, []string{"host box"}, eval[[]string](t, b, groups))
		b.do(t, time.Minute, chromedp.SetValue(chromedp.CSS("#session-host"), ""))
		require.True(t, eval[bool](t, b, `(() => { document.getElementById("session-host").dispatchEvent(new Event("input")); return true })()`))
		assert.Equal(t, []string{"host .", "host box"}, eval[[]string](t, b, groups))

		ids := `[...document.querySelectorAll('#message-table tbody tr')].map(r => r.dataset.id)`
		assert.Equal(t, []string{"4", "3", "2", "1"}, eval[[]string](t, b, ids), "newest first")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#session-groups [data-key="host ."] button[data-pick=". alpha-id"]`)))
		assert.Equal(t, []string{"4", "1"}, eval[[]string](t, b, ids), "alpha's here: by its id, or by its name before it had one; not box's alpha")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`button[data-pick="box alpha-id"]`)))
		assert.Equal(t, []string{"3"}, eval[[]string](t, b, ids), "box's alpha")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`button[data-pick="box alpha-id"]`)))
		assert.Equal(t, []string{"4", "3", "2", "1"}, eval[[]string](t, b, ids), "a second click shows every message again")
	})

	// Messages beyond a page: "older" reads the next page from the
	// server, "newer" goes back; the state filter reads that state's
	// messages from the server, beyond the page shown.
	t.Run("older pages and the state filter are the server's", func(t *testing.T) {
		var msgs []dashboard.Message
		for id := int64(12); id >= 1; id-- {
			m := stored(id, "")
			m.CreatedAt = fmt.Sprintf("2026-03-01T10:%02d:00Z", id)
			if id%4 == 0 {
				m.State = "outcome_unknown"
			}
			msgs = append(msgs, m)
		}
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("")}, msgs: msgs}
		open(t, p, dashboard.Options{Page: 5, Every: 100 * time.Millisecond})
		ids := `[...document.querySelectorAll('#message-table tbody tr')].map(r => r.dataset.id).join(" ")`
		b.until(t, time.Minute, "the newest page", ids+` === "12 11 10 9 8"`)
		pager := `document.getElementById("msg-page").textContent`
		assert.Equal(t, "the newest 5 of 12; older ones on the next page", eval[string](t, b, pager), "the pager says what it shows")
		assert.False(t, eval[bool](t, b, `document.getElementById("msg-older").hidden`))
		assert.True(t, eval[bool](t, b, `document.getElementById("msg-newer").hidden`))
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS("#msg-older")))
		b.until(t, time.Minute, "the next page", ids+` === "7 6 5 4 3"`)
		assert.Equal(t, "the next 5 of 12, older than message 8; older ones on the next page", eval[string](t, b, pager))
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS("#msg-older")))
		b.until(t, time.Minute, "the last page", ids+` === "2 1"`)
		assert.Equal(t, "the last 2 of 12, older than message 3", eval[string](t, b, pager))
		assert.True(t, eval[bool](t, b, `document.getElementById("msg-older").hidden`))
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS("#msg-newer")))
		b.until(t, time.Minute, "the page before", ids+` === "7 6 5 4 3"`)
		b.do(t, time.Minute, chromedp.SetValue(chromedp.CSS("#msg-state"), "outcome_unknown"))
		require.True(t, eval[bool](t, b, `(() => { document.getElementById("msg-state").dispatchEvent(new Event("input")); return true })()`))
		b.until(t, time.Minute, "every outcome_unknown message, from the newest", ids+` === "12 8 4"`)
		assert.Equal(t, "all 3, outcome_unknown only", eval[string](t, b, pager))
		// A page's stream carries its changes: one that leaves the state leaves the page.
		p.set(func(p *pageBackend) { p.msgs[4].State = "stored" })
		b.until(t, time.Minute, "message 8 gone from the outcome_unknown page", ids+` === "12 4"`)
		b.until(t, time.Minute, "the count changed too", pager+` === "all 2, outcome_unknown only"`)
	})

	// Retry of an outcome_unknown message asks first: "Keep it" sends
	// nothing, "Send again" sends it with the user's confirmation.
	t.Run("retry of an outcome_unknown message asks first", func(t *testing.T) {
		unknown := stored(5, "")
		unknown.State = "outcome_unknown"
		p := &pageBackend{hosts: []dashboard.HostListing{pageHost("")}, msgs: []dashboard.Message{unknown}}
		open(t, p, dashboard.Options{})
		row := `document.querySelector('#message-table tr[data-id="5"]')`
		b.until(t, time.Minute, "the Retry button", "!!"+row+` && !!`+row+`.querySelector("button.act-retry")`)
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="5"] button.act-retry`)))
		b.until(t, time.Minute, "the question", "!!"+row+`.querySelector("button.act-resend")`)
		assert.Contains(t, eval[string](t, b, row+".textContent"), "may have arrived already")
		assert.Equal(t, "Keep it message 5", eval[string](t, b, `document.activeElement.getAttribute("aria-label")`), "focus on the safe answer")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="5"] button.act-keep`)))
		b.until(t, time.Minute, "the Retry button again", "!!"+row+`.querySelector("button.act-retry")`)
		assert.Empty(t, p.retriedIDs(), "nothing sent")
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="5"] button.act-retry`)))
		b.until(t, time.Minute, "the question", "!!"+row+`.querySelector("button.act-resend")`)
		b.do(t, time.Minute, chromedp.Click(chromedp.CSS(`#message-table tr[data-id="5"] button.act-resend`)))
		eventually(t, time.Minute, "the retry", func() bool { return len(p.retriedIDs()) > 0 })
		assert.Equal(t, []string{"5 confirmed=true"}, p.retriedIDs(), "the user's confirmation goes to the use case")
		assert.Empty(t, b.seenDialogs(), "asked in the page, not in a dialog")
	})
}
