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
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
