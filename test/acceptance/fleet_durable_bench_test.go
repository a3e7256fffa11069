//go:build linux

package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/socktest"
)

// durableNode is a machine of a durable benchmark: a service's folders on
// the bus as node name, with fake Claude Code sessions inbox-0, inbox-1,
// ... whose sockets record what they are given.
type durableNode struct {
	serveWorld
	name    string
	inboxes []*socktest.Listener
}

// frames is how many frames the node's sessions were given.
func (n *durableNode) frames() int {
	c := 0
	for _, l := range n.inboxes {
		c += len(l.Frames())
	}
	return c
}

// durableFleet is the machines of a durable benchmark on one embedded NATS
// server: node "alpha" sends (its service carries each `send --durable
// --host nats:NODE`), the nodes receive, each letting node:alpha send.
type durableFleet struct {
	b       *testing.B
	peerctl string
	url     string
	alpha   serveWorld
	nodes   []*durableNode
	js      jetstream.JetStream
	// post, when set, is node alpha's connection to the bus: send puts
	// each message in the node's mail with it, as alpha's service would
	// (no command, no service on alpha), and receipts are what it read.
	post     *natsbus.Bus
	receipts *mailReceipts
}

// newDurableFleet starts the machines; with direct, alpha's sends are
// put on the bus by this process as node alpha (f.post) instead of by
// commands carried by alpha's service.
func newDurableFleet(b *testing.B, nodes, sessions int, direct bool) *durableFleet {
	f := &durableFleet{b: b, peerctl: peerctlWithMCP(b), url: natstest.Start(b)}
	nc, err := nats.Connect(f.url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	if f.js, err = jetstream.New(nc); err != nil {
		b.Fatal(err)
	}
	for i := range nodes {
		n := &durableNode{serveWorld: newServeWorldB(b), name: fmt.Sprintf("node-%02d", i)}
		dir := catSocketDir(b)
		for j := range sessions {
			pid := longSleeper(b)
			sock := filepath.Join(dir, fmt.Sprintf("in-%d.sock", j))
			catWriteJSON(b, n.sessions, catFile(pid), catRecord(b, pid, fmt.Sprintf("inbox-%d", j), sock))
			n.inboxes = append(n.inboxes, socktest.Listen(b, sock, false))
		}
		n.more = []string{"PEERCTL_NATS=" + f.url, "PEERCTL_NODE=" + n.name, "CLAUDE_CONFIG_DIR=" + n.config, "XDG_CONFIG_HOME=" + b.TempDir()}
		f.run(n.env(b), "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
		f.nodes = append(f.nodes, n)
	}
	if direct {
		if f.post, err = natsbus.Connect(natsbus.Settings{URLs: f.url, Node: "alpha", Name: "alpha"}, false); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(f.post.Close)
		f.receipts = &mailReceipts{}
		stop, err := f.post.TakeReceipts(context.Background(), "alpha", f.receipts.take, func(l string) { b.Log(l) })
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		return f
	}
	f.alpha = newServeWorldB(b)
	f.alpha.more = []string{"PEERCTL_NATS=" + f.url, "PEERCTL_NODE=alpha", "XDG_CONFIG_HOME=" + b.TempDir()}
	f.alpha.startServe(b)
	return f
}

// longSleeper is the pid of a `sleep` that outlives a long run (a
// session's record names a live pid; testproc.Sleeper's lives 10
// minutes, less than 10,000 messages take on a loaded machine), killed
// and reaped when b ends.
func longSleeper(b *testing.B) int {
	cmd := exec.Command("sleep", "86400")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func (f *durableFleet) run(env []string, args ...string) []byte {
	out, err := command(env, f.peerctl, args...).Output()
	if err != nil {
		f.b.Fatalf("peerctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// send makes alpha's durable sends: message i (key bench-i, its text
// naming it) to node i mod len(to), its session inbox-(i/len(to) mod the
// node's sessions), `senders` commands at a time. Each is stored (on the
// bus, in the node's mail) when it returns.
func (f *durableFleet) send(to []*durableNode, from, count, senders int) {
	var env []string
	if f.post == nil {
		env = f.alpha.env(f.b)
	}
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, senders)
	for range senders {
		wg.Go(func() {
			for i := range work {
				n := to[i%len(to)]
				session := fmt.Sprintf("inbox-%d", i/len(to)%len(n.inboxes))
				key, text := fmt.Sprintf("bench-%d", i), fmt.Sprintf("the API changed, rebase on main (bench-msg-%d)", i)
				var err error
				if f.post != nil {
					err = f.post.PostMail(context.Background(), n.name, "alpha", wire.SendOrder{
						Query: wire.SendQuery{Address: session, Text: text, NoConfirm: true}, Durable: time.Hour, Key: key}, 0)
				}
				var out []byte
				if f.post == nil {
					out, err = command(env, f.peerctl, "send", "--json", "--no-confirm", "--durable", "--key", key,
						"--host", "nats:"+n.name, session, text).Output()
				}
				var r durableReceipt
				if err == nil && f.post == nil {
					err = json.Unmarshal(out, &r)
				}
				if err == nil && f.post == nil && (!r.OK || r.Outcome != "stored") {
					err = fmt.Errorf("not stored: %s", out)
				}
				if err != nil {
					select {
					case errs <- fmt.Errorf("message %d to %s: %w", i, n.name, err):
					default:
					}
				}
			}
		})
	}
	for i := from; i < from+count; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		f.b.Fatal(err)
	default:
	}
}

var benchMsg = regexp.MustCompile(`bench-msg-(\d+)`)

// arrivals watches the nodes' sessions every 5 ms from now and records
// when each message first reached one, and how many times each did.
type arrivals struct {
	mu    sync.Mutex
	first map[int]time.Time
	times map[int]int
	stop  chan struct{}
	done  chan struct{}
}

func watchArrivals(nodes []*durableNode) *arrivals {
	a := &arrivals{first: map[int]time.Time{}, times: map[int]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	var inboxes []*socktest.Listener
	for _, n := range nodes {
		inboxes = append(inboxes, n.inboxes...)
	}
	seen := make([]int, len(inboxes))
	for j, l := range inboxes {
		seen[j] = len(l.Frames())
	}
	go func() {
		defer close(a.done)
		for {
			now := time.Now()
			for j, l := range inboxes {
				frames := l.Frames()
				a.mu.Lock()
				for _, fr := range frames[seen[j]:] {
					for _, m := range benchMsg.FindAllSubmatch(fr, -1) {
						i, _ := strconv.Atoi(string(m[1]))
						if _, ok := a.first[i]; !ok {
							a.first[i] = now
						}
						a.times[i]++
					}
				}
				a.mu.Unlock()
				seen[j] = len(frames)
			}
			select {
			case <-a.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return a
}

// delivered is how many keys' receipts said delivered.
func (r *mailReceipts) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := map[string]bool{}
	for _, g := range r.got {
		if f := strings.Fields(g); len(f) >= 3 && f[2] == "delivered:" {
			keys[f[1]] = true
		}
	}
	return len(keys)
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.first)
}

// last is when the last message arrived.
func (a *arrivals) last() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var t time.Time
	for _, at := range a.first {
		if at.After(t) {
			t = at
		}
	}
	return t
}

func (a *arrivals) end() {
	close(a.stop)
	<-a.done
}

// exactlyOnce fails b unless messages from..from+count-1 each arrived
// once, and nothing else did.
func (a *arrivals) exactlyOnce(b *testing.B, from, count int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := from; i < from+count; i++ {
		if a.times[i] != 1 {
			b.Fatalf("message %d reached its session %d times", i, a.times[i])
		}
	}
	if len(a.times) != count {
		b.Fatalf("%d messages reached the sessions, %d sent", len(a.times), count)
	}
}

// outboxStates counts the entries of a folder's outbox by state.
func (f *durableFleet) outboxStates(w serveWorld) map[string]int {
	var out []outboxEntry
	if err := json.Unmarshal(f.run(w.env(f.b), "outbox", "--json"), &out); err != nil {
		f.b.Fatal(err)
	}
	states := map[string]int{}
	keys := map[string]bool{}
	for _, e := range out {
		states[e.State]++
		if keys[e.Key] {
			f.b.Fatalf("key %s twice in an outbox", e.Key)
		}
		keys[e.Key] = true
	}
	return states
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkFleetDurableBacklog (hermetic; `make bench-fleet`) sends
// BENCH_MESSAGES durable messages (default 10,000) across BENCH_NODES
// nodes (default 10) of BENCH_SESSIONS fake Claude Code sessions each
// (default 10) while their services are down: `send --json --no-confirm
// --durable --key K --host nats:NODE inbox-J TEXT` on node alpha, carried
// by alpha's service, BENCH_SENDERS commands at a time (default 4), each
// stored in the node's mail on an embedded NATS server; with
// BENCH_SEND=bus the benchmark puts them in the mail itself as node alpha
// (adapters/natsbus, as alpha's service does), BENCH_SENDERS at a time.
// Then every node's service starts at once and drains its mail into its
// sessions. It fails unless every message reached its session exactly
// once, each node's outbox holds its messages all delivered, every node's
// mail is acknowledged and alpha's outbox (with BENCH_SEND=bus: the
// receipts alpha read) shows every message delivered. It reports the sends' rate, the time to drain and
// the throughput from the services' start to the last delivery, and each
// node service's peak RSS (VmHWM) (docs/PERFORMANCE.md, "The fleet").
// One iteration runs it all once; use -benchtime=1x.
func BenchmarkFleetDurableBacklog(b *testing.B) {
	nodes, sessions, messages, senders := envInt("BENCH_NODES", 10), envInt("BENCH_SESSIONS", 10), envInt("BENCH_MESSAGES", 10000), envInt("BENCH_SENDERS", 4)
	direct := os.Getenv("BENCH_SEND") == "bus"
	f := newDurableFleet(b, nodes, sessions, direct)
	for b.Loop() {
		start := time.Now()
		f.send(f.nodes, 0, messages, senders)
		sent := time.Since(start)
		a := watchArrivals(f.nodes)
		start = time.Now()
		for _, n := range f.nodes {
			n.startServe(b)
		}
		eventually(b, 2*time.Hour, "every message to reach its session", func() bool { return a.count() == messages })
		drained := a.last().Sub(start)
		eventually(b, 10*time.Minute, "every node's mail to be acknowledged", func() bool {
			for _, n := range f.nodes {
				if !mailDrained(f.js, n.name) {
					return false
				}
			}
			return true
		})
		// A late second delivery would show here.
		time.Sleep(2 * time.Second)
		a.end()
		a.exactlyOnce(b, 0, messages)
		var rss []float64
		for _, n := range f.nodes {
			rss = append(rss, float64(vmHWM(b, n.servePID(b)))/1024)
		}
		alpha := "none (BENCH_SEND=bus)"
		if !direct {
			alpha = fmt.Sprintf("%.1f", float64(vmHWM(b, f.alpha.servePID(b)))/1024)
		}
		for _, n := range f.nodes {
			eventually(b, 10*time.Minute, n.name+"'s outbox to show its messages delivered", func() bool {
				st := f.outboxStates(n.serveWorld)
				return st["delivered"] == n.frames() && len(st) == 1
			})
		}
		var receipts time.Duration
		eventually(b, 30*time.Minute, "alpha to read every message's receipt as delivered", func() bool {
			receipts = time.Since(start)
			if direct {
				return f.receipts.delivered() == messages
			}
			return f.outboxStates(f.alpha)["delivered"] == messages
		})
		r := stat(rss)
		b.ReportMetric(float64(messages)/sent.Seconds(), "sends/s")
		b.ReportMetric(drained.Seconds(), "s-drain")
		b.ReportMetric(float64(messages)/drained.Seconds(), "msgs/s")
		b.ReportMetric(r[0], "MiB-peak-rss-median")
		b.ReportMetric(r[2], "MiB-peak-rss-max")
		b.Logf("\nDURABLE BACKLOG: %d messages across %d nodes of %d sessions, %d senders\n"+
			"  stored: %.1f s (%.0f sends/s); drained from the services' start: %.1f s (%.0f messages/s); "+
			"alpha read every receipt as delivered by %.1f s\n  peak RSS MiB per node service: %s (median %.1f, max %.1f); alpha's service %s\n%s",
			messages, nodes, sessions, senders, sent.Seconds(), float64(messages)/sent.Seconds(), drained.Seconds(),
			float64(messages)/drained.Seconds(), receipts.Seconds(), fmtFloats(rss), r[0], r[2], alpha, loadLine())
	}
}

// BenchmarkFleetDurableComeBack (hermetic; `make bench-fleet`) sends
// BENCH_MESSAGES durable messages (default 20) from node alpha to node
// beta while beta's service is down, then starts it and times, from its
// start (the exec), each message's arrival in beta's fake Claude Code
// session (polled every 5 ms), in one run; it fails unless each arrived
// exactly once (docs/PERFORMANCE.md, "The fleet": the issue's "within 2 s
// of its node's service coming back"). It then stops beta's service again
// and does the same once more, so the second figure is a service coming
// back to a folder it has run before. One iteration runs it all once;
// use -benchtime=1x.
func BenchmarkFleetDurableComeBack(b *testing.B) {
	messages := envInt("BENCH_MESSAGES", 20)
	f := newDurableFleet(b, 1, 1, false)
	beta := f.nodes[0]
	for b.Loop() {
		var report strings.Builder
		fmt.Fprintf(&report, "\nDURABLE COME-BACK: %d messages waiting for node beta's service; ms from its start to each arrival\n", messages)
		for round, label := range []string{"first start", "started again"} {
			from := round * messages
			f.send(f.nodes, from, messages, 4)
			a := watchArrivals(f.nodes)
			start := time.Now()
			beta.startServe(b)
			eventually(b, 5*time.Minute, "every message to reach beta's session", func() bool { return a.count() == messages })
			eventually(b, 5*time.Minute, "beta's mail to be acknowledged", func() bool { return mailDrained(f.js, beta.name) })
			time.Sleep(2 * time.Second)
			a.end()
			a.exactlyOnce(b, from, messages)
			var d []float64
			for _, at := range a.first {
				d = append(d, ms(at.Sub(start)))
			}
			slices.Sort(d)
			s := stat(d)
			p90 := d[len(d)*9/10]
			fmt.Fprintf(&report, "  %-14s first %.0f, median %.0f, p90 %.0f, last %.0f\n", label, s[1], s[0], p90, s[2])
			key := strings.ReplaceAll(label, " ", "-")
			b.ReportMetric(s[1], "ms-first-"+key)
			b.ReportMetric(s[0], "ms-median-"+key)
			b.ReportMetric(s[2], "ms-last-"+key)
			beta.stopServe(b)
		}
		report.WriteString(loadLine())
		b.Log(report.String())
	}
}

func fmtFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " ")
}
