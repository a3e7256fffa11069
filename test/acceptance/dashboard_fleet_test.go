//go:build unix

package acceptance

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports/wire"
)

// The dashboard shows the fleet (serve --nats: the service's live view of
// every node's presence) grouped by node, pushed as it changes: a node
// that leaves drops out, a status changes in place; other machines'
// words are text, never markup or terminal escapes; no bus, no section.
func TestDashboardShowsTheFleet(t *testing.T) {
	b := newBrowser(t)
	node := func(name string, sessions ...wire.Session) []wire.Session {
		for i := range sessions {
			sessions[i].Host = "nats:" + name
		}
		return sessions
	}
	ses := func(pid int, name, status string) wire.Session {
		return wire.Session{Harness: "claude-code", SessionID: name + "-id", PID: pid, Name: name, Cwd: "/src/" + name, Status: status, Verdict: "live", Addressable: true}
	}
	evil := "<img src=x onerror=alert(1)>\x1b[2J"
	fleet := wire.Listing{Sessions: append(node("alpha", ses(101, "api", "idle"), ses(102, evil, "busy")), node("beta", ses(201, "web", "idle"))...)}
	p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "here")}, fleet: &fleet}
	b.do(t, time.Minute, chromedp.Navigate(servePage(t, p, dashboard.Options{Every: 100 * time.Millisecond})))
	b.until(t, time.Minute, "the fleet's two nodes", `document.querySelectorAll('#fleet [data-node]').length === 2 && !document.getElementById('fleet').hidden`)
	assert.Equal(t, []string{"alpha", "beta"}, eval[[]string](t, b, `[...document.querySelectorAll('#fleet [data-node] h3')].map(h => h.textContent)`))
	assert.Equal(t, []string{"api", `<img src=x onerror=alert(1)>\x1b[2J`, "web"}, eval[[]string](t, b, `[...document.querySelectorAll('#fleet td.name')].map(td => td.textContent)`),
		"another machine's name is text, escaped")
	assert.Zero(t, eval[int](t, b, `document.querySelectorAll('#fleet img').length`))
	assert.Contains(t, eval[string](t, b, `document.getElementById('fleet-count').textContent`), "2 nodes, 3 live")

	left := wire.Listing{Sessions: node("alpha", ses(101, "api", "busy"), ses(102, evil, "busy"))}
	p.set(func(p *pageBackend) { p.fleet = &left })
	b.until(t, time.Minute, "beta to drop out and api to be busy", `document.querySelectorAll('#fleet [data-node]').length === 1 &&
  document.querySelector('#fleet tr[data-session="api-id"]').textContent.includes("busy")`)

	p.set(func(p *pageBackend) { p.fleet = nil })
	b.until(t, time.Minute, "the fleet's section to go with the bus", `document.getElementById('fleet').hidden`)
	assert.Empty(t, b.seenDialogs(), "no script ran from a name")
}

// The sender's dashboard shows a message for a node of the fleet with
// its chain there (the node's receipts, as outbox show has them): under
// the node's name and its id there, each step's reason on one line
// without the "on nats:NODE (message N there): " head, the reply from
// there prominent, the user's home as "~"; the node's name, and every
// word the node sent, is text, never markup.
func TestDashboardShowsAMessagesChainOnItsNode(t *testing.T) {
	b := newBrowser(t)
	node := "nats:<img src=x onerror=alert(1)>\x1b[2J"
	far := func(r string) string { return wire.FarHead(node, 7) + r }
	long := "not_live: no live session named \"api\" in /home/u/.claude/sessions; it is tried again when the session is back or at the next backoff"
	m := dashboard.Message{ID: 3, State: "replied", Host: node, Address: "api", Text: "the release is cut", Outcome: "delivered", Transport: "courier",
		MsgID: "0d1e2f30-4a5b-4c6d-8e9f-a0b1c2d3e4f5", CreatedAt: "2026-03-01T10:00:00Z", UpdatedAt: "2026-03-01T10:05:00Z",
		Reason: far(wire.RepliedReason("api<script>", "done, tagged v1.2")), History: []dashboard.Event{
			{At: "2026-03-01T10:00:00Z", State: "stored", Reason: "on the fleet's bus, in node x's mail: its service takes it when it runs"},
			{At: "2026-03-01T10:01:00Z", State: "stored", Reason: far("stored")},
			{At: "2026-03-01T10:02:00Z", State: "stored", Reason: far(long)},
			{At: "2026-03-01T10:03:00Z", State: "delivered", Reason: far("the harness took it (delivered): <b>bold</b>")},
			{At: "2026-03-01T10:04:00Z", State: "taken_up", Reason: far("the transcript shows the session took it up (its user line)")},
			{At: "2026-03-01T10:05:00Z", State: "replied", Reason: far(wire.RepliedReason("api<script>", "done, tagged v1.2"))}}}
	p := &pageBackend{hosts: []dashboard.HostListing{pageHost("", "here")}, msgs: []dashboard.Message{m}}
	b.do(t, time.Minute, chromedp.Navigate(servePage(t, p, dashboard.Options{Every: 100 * time.Millisecond, Home: "/home/u"})))
	row := `document.querySelector('#message-table tr[data-id="3"]')`
	b.until(t, time.Minute, "the message's chain on its node", "!!"+row+` && !!`+row+`.querySelector(".far")`)

	farBox := row + `.querySelector(".far")`
	assert.Equal(t, `on nats:<img src=x onerror=alert(1)>\x1b[2J (message 7 there):`, eval[string](t, b, farBox+`.querySelector(".muted").textContent`),
		"the node's name is text, escaped")
	assert.Equal(t, []string{"stored", "delivered", "taken_up", "replied"}, eval[[]string](t, b, `[...`+farBox+`.querySelectorAll(".chain .badge")].map(e => e.textContent)`))
	assert.Equal(t, []string{"stored"}, eval[[]string](t, b, `[...`+row+`.querySelectorAll("td.receipts > .chain .badge")].map(e => e.textContent)`),
		"this machine's own steps apart")
	text := eval[string](t, b, row+".innerText")
	assert.NotContains(t, text, "(message 7 there): ", "no head repeated on each line")
	assert.NotContains(t, text, "next backoff", "a long reason is one line, the rest on demand")
	assert.Contains(t, text, "~/.claude/sessions")
	assert.NotContains(t, eval[string](t, b, row+".textContent"), "/home/u/")
	assert.Contains(t, text, "msg_id 0d1e2f30-4a5b-4c6d-8e9f-a0b1c2d3e4f5", "the harness's receipt, from the node")
	assert.Equal(t, "done, tagged v1.2", eval[string](t, b, row+`.querySelector(".reply-text").textContent`), "the reply from there")
	assert.Contains(t, eval[string](t, b, row+`.querySelector(".reply").textContent`), `reply from api<script>`)
	assert.Contains(t, eval[string](t, b, farBox+".textContent"), "<b>bold</b>", "a far reason's markup is text")
	assert.Zero(t, eval[int](t, b, `document.querySelectorAll('#message-table img, #message-table script, #message-table b').length`))
	assert.Empty(t, b.seenDialogs(), "no script ran from a node's words")
}
