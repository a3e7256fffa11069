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
