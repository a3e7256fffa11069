//go:build unix

package acceptance

// The dashboard (peerctl serve --http) in a real browser against real
// Claude Code 2.1.332 sessions (PEERCTL_LIVE=1), offline. One session,
// started before the service, is shared by the subtests: a session that
// starts shows on the page and leaves it when it ends; a send typed into
// the page is delivered into the shared session and its receipt shows.
//
// With PEERCTL_DASHBOARD_SHOT=FILE the service is node dev-box of a fleet's
// bus (the shared three-server cluster, natscluster_test.go) and the test
// also starts two more sessions and another node (ci-runner, a service with
// a fake session), sends ci-runner a durable message (its chain there
// shows) and leaves one waiting in the outbox, and writes a PNG of the
// whole page to FILE (docs/dashboard.png is made so; see docs/COMMANDS.md). In the
// picture the test's temporary root is shown as "~": the page shows the
// folders as they are, and those are the test's own throwaway ones.

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/test/livecc"
)

// liveDashDeadline bounds each wait for the page. The goal is 2 s (the
// page reads the machine every second); the bound is wide so that a
// loaded machine does not fail the test, and the time taken is logged.
const liveDashDeadline = 30 * time.Second

// rowJS is a JavaScript expression: the page's row of session id.
func rowJS(id string) string {
	return fmt.Sprintf(`document.querySelector('#session-groups tr[data-session=%q]')`, id)
}

func TestLiveDashboard(t *testing.T) {
	t.Parallel()
	bin := livecc.Require(t, KnownNewestClaudeCode)
	top := t // sessions started in a subtest live as long as the test
	root := livecc.NewRoot(t)
	s := livecc.Start(t, bin, livecc.Options{Root: root, Label: "reviewer", WaitSettled: true})
	l := newLiveServe(t, s.ConfigDir, bin)
	shot := os.Getenv("PEERCTL_DASHBOARD_SHOT")
	var urls string
	if shot != "" {
		// In the picture this machine is node dev-box of a fleet's bus
		// (the shared three-server cluster).
		peerctlWithMCP(t)
		urls = sharedNATSCluster(t)
		l.env = append(l.env, "PEERCTL_NATS="+urls, "PEERCTL_NODE=dev-box")
	}
	u := startDashboard(t, l.env)
	b := newBrowser(t)
	b.do(t, time.Minute, chromedp.Navigate(u))
	took := b.until(t, time.Minute, "the shared session", "!!"+rowJS(s.SessionID))
	t.Logf("the page showed the running session %s after %s", s.SessionID, took)

	t.Run("a session that starts shows, and leaves the page when it ends", func(t *testing.T) {
		n := livecc.Start(t, bin, livecc.Options{Root: root, Label: "newcomer"})
		took := b.until(t, liveDashDeadline, "the new session's row", "!!"+rowJS(n.SessionID))
		t.Logf("a new session showed %s after its record was written (goal: 2s)", took)
		row := eval[string](t, b, rowJS(n.SessionID)+".textContent")
		assert.Contains(t, row, n.Cwd)
		assert.Contains(t, row, "claude")
		n.Stop()
		took = b.until(t, liveDashDeadline, "the ended session's row to go", "!"+rowJS(n.SessionID))
		t.Logf("an ended session left the page %s after its record was removed (goal: 2s)", took)
		assert.True(t, eval[bool](t, b, "!!"+rowJS(s.SessionID)), "the shared session stayed")
	})

	t.Run("a send typed into the page is delivered and its receipt shows", func(t *testing.T) {
		text := "peerctl dashboard live check " + strconv.FormatInt(time.Now().UnixNano(), 36)
		short := eval[string](t, b, rowJS(s.SessionID)+`.querySelector("td.mono").textContent`)
		require.NotEmpty(t, short)
		// Pick the session in the form as a person does: by its option.
		pick := fmt.Sprintf(`(() => { const sel = document.getElementById("send-to");
  const o = [...sel.options].find(o => o.textContent.includes("(" + %q + ","));
  if (!o) return false; sel.value = o.value; return true })()`, short)
		b.until(t, liveDashDeadline, "the session among the send form's choices", pick)
		b.do(t, time.Minute, chromedp.SendKeys(chromedp.CSS("#send-text"), text), chromedp.Click(chromedp.CSS("#send-button")))
		// The receipt under the text sent, in the newest result box.
		box := `document.querySelector("#send-results .result")`
		b.until(t, 3*time.Minute, "the send's receipt", box+` && !!`+box+`.querySelector(".receipt")`)
		got := eval[string](t, b, box+".textContent")
		assert.Contains(t, got, text)
		assert.Equal(t, "delivered", eval[string](t, b, box+`.querySelector(".receipt .badge").textContent`), "the receipt: %s", got)
		assert.Contains(t, got, "by courier", "the receipt: %s", got)
		eventually(t, time.Minute, "the text in the session's transcript", func() bool { return enqueuedCount(t, s.TranscriptPath(), text) > 0 })
		assert.Equal(t, 1, enqueuedCount(t, s.TranscriptPath(), text), "delivered once")
		assert.Empty(t, eval[string](t, b, `document.getElementById("send-text").value`), "the form was cleared")
		// The send the service carried is among the Messages too, with its
		// receipt, and has nothing to cancel or retry.
		row := fmt.Sprintf(`[...document.querySelectorAll('#message-table tr[data-id="0"]')].find(r => r.textContent.includes(%q))`, text)
		b.until(t, liveDashDeadline, "the page's send among the messages", "!!"+row)
		msg := eval[string](t, b, row+".textContent")
		assert.Contains(t, msg, "delivered", "the message row: %s", msg)
		assert.Contains(t, msg, "by courier", "the message row: %s", msg)
		assert.False(t, eval[bool](t, b, "!!"+row+`.querySelector("button")`), "no Cancel or Retry for a send the outbox does not hold")
	})

	if shot != "" {
		t.Run("a picture of the page", func(t *testing.T) {
			for _, label := range []string{"api", "web"} {
				livecc.Start(top, bin, livecc.Options{Root: root, Label: label, WaitSettled: true})
			}
			// Another machine of the fleet, whose session takes a
			// durable message from this one: its chain there shows.
			ci := newServeWorld(top)
			ci.more = []string{"PEERCTL_NATS=" + urls, "PEERCTL_NODE=ci-runner", "CLAUDE_CONFIG_DIR=" + ci.config, "XDG_CONFIG_HOME=" + top.TempDir()}
			r := runPeerctl(t, runOpts{Env: ci.env(t)}, "policy", "add", "--from", "node:dev-box", "--to", "*", "allow")
			require.Equal(t, 0, r.Code, "%s", r.Stderr)
			ci.addSession(top, "nightly")
			ci.startServe(top)
			r = l.peerctl(t, "send", "--json", "--durable=1h", "--key", "nightly-42", "--host", "nats:ci-runner", "nightly", "run the nightly again on main")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			r = l.peerctl(t, "send", "--json", "--durable=1h", "docs-writer", "the release notes are yours once you are up")
			require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
			b.until(t, 3*time.Minute, "three sessions, two nodes and the messages", `document.querySelectorAll("#session-groups tbody tr").length >= 3 &&
  document.querySelectorAll("#fleet [data-node]").length === 2 && document.getElementById("message-table").textContent.includes("docs-writer") &&
  [...document.querySelectorAll("#message-table .far .badge")].some(b => b.textContent === "delivered")`)
			// Show the throwaway folders (the sessions' root, the
			// service's HOME) as "~", now and on every change.
			home := ""
			for _, kv := range l.env {
				if v, ok := strings.CutPrefix(kv, "HOME="); ok {
					home = v
				}
			}
			redact := fmt.Sprintf(`(() => { const roots = [%q, %q];
  const fix = () => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) for (const r of roots) if (n.nodeValue.includes(r)) n.nodeValue = n.nodeValue.split(r).join("~"); };
  fix(); new MutationObserver(fix).observe(document.body, {subtree: true, childList: true, characterData: true}); return true })()`, root, home)
			require.True(t, eval[bool](t, b, redact))
			// A path that starts in the temporary folder (not one under
			// "~", such as a socket's ~/tmp/cc-socks/...).
			left := eval[string](t, b, fmt.Sprintf(`(() => { const tmp = %q;
  return document.body.innerText.split("\n").filter(l => l.split(tmp).slice(0, -1).some(before => !before.endsWith("~"))).join("\n") })()`, os.TempDir()+"/"))
			require.Empty(t, left, "a temporary path is still on the page")
			shotPNG, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			// Chromium's PNG is made fast, not small: written again with
			// the best compression.
			img, err := png.Decode(bytes.NewReader(shotPNG))
			require.NoError(t, err)
			var small bytes.Buffer
			require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&small, img))
			require.NoError(t, os.WriteFile(shot, small.Bytes(), 0o644))
			t.Logf("wrote %s (%d bytes; %d as Chromium made it)", shot, small.Len(), len(shotPNG))
		})
	}
}
