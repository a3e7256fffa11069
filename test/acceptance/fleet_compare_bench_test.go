//go:build linux

package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/livessh"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/socktest"
)

// BenchmarkLiveFleetVsSSH (PEERCTL_LIVE=1, as root; `make bench-fleet`)
// times `list --fleet --json` over N nodes of 10 sessions each, published
// on an embedded NATS server, against `list --json --host H1 ... --host
// HN` over ssh, for N = 10 and 100, back to back in the same run (ABBA,
// BENCH_RUNS pairs, default 10), the ratio (ssh / fleet) taken pair by
// pair (docs/PERFORMANCE.md, "The fleet").
//
// The N ssh hosts are N aliases of one second machine (test/livessh: a
// real sshd on loopback in a pid namespace of its own): peerctl names a
// shared connection by `ssh -G`'s whole output, which differs by alias,
// so each alias has a master connection of its own, warm (started once
// before the timing; they persist 60 s after their last call), and a far
// peerctl of its own per call, as N machines would; but the N far sides
// share this machine's CPUs, and their registry is empty (the fleet's
// nodes carry 10 sessions each), both in ssh's favour. peerctl reaches at
// most 16 hosts at once (app.MaxParallelNodes). One iteration runs it all
// once; use -benchtime=1x.
func BenchmarkLiveFleetVsSSH(b *testing.B) {
	livessh.Require(b)
	peerctl := peerctlWithMCP(b) // list --fleet runs in peerctl-mcp
	far := livessh.Start(b, "far")
	sizes := []int{10, 100}
	aliases := make([]string, sizes[len(sizes)-1])
	for i := range aliases {
		aliases[i] = fmt.Sprintf("far-%03d", i)
	}
	cfg := filepath.Join(far.Home, "empty")
	if out, err := far.SSH(b.Context(), nil, "mkdir", "-p", cfg+"/sessions"); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	url := natstest.Start(b)
	bus, err := natsbus.Connect(natsbus.Settings{URLs: url, Name: "bench"}, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bus.Close) // after the refresh stops (cleanups run last in, first out)
	nodes := newBenchFleet(b, bus)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "XDG_CONFIG_HOME=" + b.TempDir(),
		"XDG_RUNTIME_DIR=" + livecc.TempRoot(b, "lfs"), "PEERCTL_SSH=" + far.Aliases(aliases...), "PEERCTL_NATS=" + url, "PEERCTL_SERVE=off"}
	run := func(args ...string) []byte {
		b.Helper()
		out, err := command(env, peerctl, args...).Output()
		if err != nil {
			b.Fatalf("peerctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	var installed struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(run("hosts", "install", "--json", aliases[0]), &installed); err != nil || installed.Path == "" {
		b.Fatalf("hosts install: %v (path %q)", err, installed.Path)
	}
	for _, a := range aliases {
		run("hosts", "add", a, "--set", "peerctl="+installed.Path, "--set", "config-dir="+cfg)
	}
	timed := func(args []string) time.Duration {
		start := time.Now()
		run(args...)
		return time.Since(start)
	}
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	fleet := []string{"list", "--fleet", "--json"}
	for b.Loop() {
		var report strings.Builder
		fmt.Fprintf(&report, "\nFLEET AGAINST SSH (%d pairs each, ABBA; wall ms median [min..max]; ssh/fleet per pair)\n", runs)
		for _, n := range sizes {
			nodes.grow(n)
			var listed []wire.Session
			if err := json.Unmarshal(run(fleet...), &listed); err != nil || len(listed) != n*10 {
				b.Fatalf("list --fleet gave %d sessions (%v), want %d", len(listed), err, n*10)
			}
			hosts := []string{"list", "--json"}
			for _, a := range aliases[:n] {
				hosts = append(hosts, "--host", a)
			}
			timed(hosts) // start the master connections
			sh, sf, sr := abba(runs, func() time.Duration { return timed(hosts) }, func() time.Duration { return timed(fleet) })
			fmt.Fprintf(&report, "  %3d hosts: list --fleet %.1f [%.1f..%.1f]  list --host ×%d %.1f [%.1f..%.1f]  ssh/fleet %.2f [%.2f..%.2f]\n",
				n, sf[0], sf[1], sf[2], n, sh[0], sh[1], sh[2], sr[0], sr[1], sr[2])
			b.ReportMetric(sf[0], fmt.Sprintf("ms-fleet-%d", n))
			b.ReportMetric(sh[0], fmt.Sprintf("ms-ssh-%d", n))
			b.ReportMetric(sr[0], fmt.Sprintf("ssh/fleet-%d", n))
		}
		report.WriteString(loadLine())
		b.Log(report.String())
	}
}

// benchFleet is nodes' presence on the bus, each node ("node-%03d") with
// 10 sessions (full `list --json` entries), kept alive: every
// natsbus.Refresh it publishes them all again, as their services would,
// so none drops out (natsbus.TTL) however long a benchmark runs.
type benchFleet struct {
	b     *testing.B
	bus   *natsbus.Bus
	mu    sync.Mutex
	nodes []*natsbus.Presence
	lists []wire.Listing
}

// newBenchFleet starts the refresh, stopped when the benchmark ends.
func newBenchFleet(b *testing.B, bus *natsbus.Bus) *benchFleet {
	f := &benchFleet{b: b, bus: bus}
	done := make(chan struct{})
	stopped := make(chan struct{})
	b.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		tick := time.NewTicker(natsbus.Refresh)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			f.mu.Lock()
			for i, p := range f.nodes {
				if err := p.Publish(context.Background(), f.lists[i]); err != nil {
					b.Errorf("refresh node %d: %v", i, err)
				}
			}
			f.mu.Unlock()
		}
	}()
	return f
}

// grow publishes nodes until there are n.
func (f *benchFleet) grow(n int) {
	f.b.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.nodes) < n {
		i := len(f.nodes)
		node := fmt.Sprintf("node-%03d", i)
		p, err := f.bus.Join(f.b.Context(), natsbus.Member{Node: node, Owner: node, Host: node, PID: 1, Version: "bench"})
		if err != nil {
			f.b.Fatal(err)
		}
		var l wire.Listing
		for j := range 10 {
			pid := 1000 + j
			sock := fmt.Sprintf("/run/user/1000/cc/%d.sock", pid)
			l.Sessions = append(l.Sessions, wire.Session{Harness: "claude-code", SessionID: fmt.Sprintf("%08d-1111-2222-3333-%012d", i, j), PID: pid,
				Name: fmt.Sprintf("proj-%d", j), NameSource: "flag", Cwd: "/home/dev/src/proj", Status: "idle", Kind: "interactive", Version: "2.1.332",
				StartedAt: "2026-12-06T10:00:00Z", SocketPath: sock, Endpoint: fmt.Sprintf("cc-peer:v1:%d:proj-%d:%s", pid, j, sock), Addressable: true,
				Verdict: "live", File: fmt.Sprintf("%d.json", pid)})
		}
		if err := p.Publish(f.b.Context(), l); err != nil {
			f.b.Fatal(err)
		}
		f.nodes, f.lists = append(f.nodes, p), append(f.lists, l)
	}
}

// BenchmarkFleetSend (hermetic; `make bench-fleet`) times a send over the
// bus, `send --json --host nats:beta inbox TEXT` from another machine
// (alpha), against the same send made on beta, `send --json inbox TEXT`,
// back to back in the same run (ABBA, BENCH_RUNS pairs, default 10), the
// ratio (bus / here) taken pair by pair (docs/PERFORMANCE.md, "The
// fleet"); and the same for list. alpha's command runs both ways in the
// same run: without a service (PEERCTL_SERVE=off: it starts peerctl-mcp,
// which connects) and with alpha's own service on the bus carrying it
// (serve's bus op). beta runs `peerctl serve` on an embedded NATS server
// with a fake Claude Code session "inbox" and the fake claude as its
// courier; its policy lets node:alpha send. Both sends are carried by
// beta's service and its courier: the bus adds alpha's side, the request
// and the answer. One iteration runs it all once; use -benchtime=1x.
func BenchmarkFleetSend(b *testing.B) {
	peerctl := peerctlWithMCP(b) // serve with a bus and --host nats:NODE run in peerctl-mcp
	url := natstest.Start(b)
	beta := newServeWorldB(b)
	sock := filepath.Join(catSocketDir(b), "in.sock")
	catWriteJSON(b, beta.sessions, catFile(os.Getpid()), catRecord(b, os.Getpid(), "inbox", sock))
	inbox := socktest.Listen(b, sock, false)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + b.TempDir()}
	betaEnv := beta.env(b)
	alphaEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "PEERCTL_SERVE=off",
		"XDG_CONFIG_HOME=" + b.TempDir(), "XDG_STATE_HOME=" + b.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(b)}
	run := func(env []string, args ...string) []byte {
		b.Helper()
		out, err := command(env, peerctl, args...).Output()
		if err != nil {
			b.Fatalf("peerctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run(betaEnv, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	beta.startServe(b)
	eventually(b, 2*time.Minute, "beta's service to answer list --host nats:beta", func() bool {
		out, err := command(alphaEnv, peerctl, "list", "--host", "nats:beta", "--json").Output()
		var listed []wire.Session
		return err == nil && json.Unmarshal(out, &listed) == nil && len(listed) == 1
	})
	sent := 0
	timed := func(env []string, args ...string) time.Duration {
		start := time.Now()
		out := run(env, args...)
		d := time.Since(start)
		var r wire.Receipt
		if err := json.Unmarshal(out, &r); err != nil || !r.OK {
			b.Fatalf("peerctl %s: not delivered (%v): %s", strings.Join(args, " "), err, out)
		}
		sent++
		return d
	}
	// Each text differs: Claude Code drops a message identical to the
	// previous one from the same sender within 30 s, and so does the courier.
	text := func() string { return fmt.Sprintf("the API changed, rebase on main (bench %d)", sent) }
	overBus := func() time.Duration {
		return timed(alphaEnv, "send", "--json", "--no-confirm", "--host", "nats:beta", "inbox", text())
	}
	here := func() time.Duration { return timed(betaEnv, "send", "--json", "--no-confirm", "inbox", text()) }
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	listOverBus := func() time.Duration {
		start := time.Now()
		run(alphaEnv, "list", "--json", "--host", "nats:beta")
		return time.Since(start)
	}
	listHere := func() time.Duration {
		start := time.Now()
		run(betaEnv, "list", "--json")
		return time.Since(start)
	}
	// alpha's service on the bus: alpha's commands hand it their requests.
	alpha := newServeWorldB(b)
	alpha.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "XDG_CONFIG_HOME=" + b.TempDir()}
	alpha.startServe(b)
	warmEnv := alpha.env(b)
	eventually(b, 2*time.Minute, "alpha's service to be on the bus", func() bool {
		out, _ := command(warmEnv, peerctl, "serve", "status", "--json").Output()
		var st struct {
			Bus *struct {
				OnBus bool `json:"onBus"`
			} `json:"bus"`
		}
		return json.Unmarshal(out, &st) == nil && st.Bus != nil && st.Bus.OnBus
	})
	carried := func() time.Duration {
		return timed(warmEnv, "send", "--json", "--no-confirm", "--host", "nats:beta", "inbox", text())
	}
	listCarried := func() time.Duration {
		start := time.Now()
		run(warmEnv, "list", "--json", "--host", "nats:beta")
		return time.Since(start)
	}
	carried()
	overBus() // warm the page cache and beta's courier, once each
	here()
	for b.Loop() {
		var report strings.Builder
		fmt.Fprintf(&report, "\nOVER THE BUS (%d pairs each, ABBA; wall ms median [min..max]; bus/here per pair)\n", runs)
		for _, p := range []struct {
			key, label string
			bus, here  func() time.Duration
		}{
			{"send", "send --host nats:beta / send on beta", overBus, here},
			{"send-carried", "the same, alpha's service carrying it", carried, here},
			{"list", "list --host nats:beta / list on beta", listOverBus, listHere},
			{"list-carried", "the same, alpha's service carrying it", listCarried, listHere},
		} {
			sb, sh, sr := abba(runs, p.bus, p.here)
			fmt.Fprintf(&report, "  %-40s %.1f [%.1f..%.1f] / %.1f [%.1f..%.1f]  %.2f [%.2f..%.2f]\n",
				p.label, sb[0], sb[1], sb[2], sh[0], sh[1], sh[2], sr[0], sr[1], sr[2])
			b.ReportMetric(sb[0], "ms-bus-"+p.key)
			b.ReportMetric(sh[0], "ms-here-"+p.key)
			b.ReportMetric(sr[0], "bus/here-"+p.key)
		}
		eventually(b, time.Minute, "every message to reach the session", func() bool { return len(inbox.Frames()) == sent })
		report.WriteString(loadLine())
		b.Log(report.String())
	}
}

// abba times a and b runs times back to back, in ABBA order, and returns
// the median, min and max of a's and b's wall ms and of a/b pair by pair.
func abba(runs int, a, b func() time.Duration) (sa, sb, ratio [3]float64) {
	var as, bs, rs []float64
	for i := range runs {
		var ta, tb time.Duration
		if i%2 == 0 {
			ta, tb = a(), b()
		} else {
			tb, ta = b(), a()
		}
		as, bs, rs = append(as, ms(ta)), append(bs, ms(tb)), append(rs, float64(ta)/float64(tb))
	}
	return stat(as), stat(bs), stat(rs)
}

// loadLine names the CPUs and the load average now, for a report.
func loadLine() string {
	load, _ := os.ReadFile("/proc/loadavg")
	return fmt.Sprintf("  %d CPUs, load average %s at the end\n", runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
}
