//go:build linux

package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// BenchmarkFleetList (hermetic; `make bench-serve`) times `list --fleet
// --json` over 100 nodes of 10 sessions each, published on an embedded
// NATS server (one server: the read is one ordered consumer either way),
// against a local `list --json` of 10 live sessions, back to back in the
// same run (ABBA, BENCH_RUNS pairs, default 10), the ratio taken pair by
// pair (docs/PERFORMANCE.md, "The fleet"). One iteration runs it all once;
// use -benchtime=1x.
func BenchmarkFleetList(b *testing.B) {
	url := natstest.Start(b)
	bus, err := natsbus.Connect(natsbus.Settings{URLs: url, Name: "bench"}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	for n := range 100 {
		node := fmt.Sprintf("node-%03d", n)
		p, err := bus.Join(b.Context(), natsbus.Member{Node: node, Owner: node, Host: node, PID: 1, Version: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		var l wire.Listing
		for i := range 10 {
			pid := 1000 + i
			sock := fmt.Sprintf("/run/user/1000/cc/%d.sock", pid)
			l.Sessions = append(l.Sessions, wire.Session{Harness: "claude-code", SessionID: fmt.Sprintf("%08d-1111-2222-3333-%012d", n, i), PID: pid,
				Name: fmt.Sprintf("proj-%d", i), NameSource: "flag", Cwd: "/home/dev/src/proj", Status: "idle", Kind: "interactive", Version: "2.1.332",
				StartedAt: "2026-12-06T10:00:00Z", SocketPath: sock, Endpoint: fmt.Sprintf("cc-peer:v1:%d:proj-%d:%s", pid, i, sock), Addressable: true,
				Verdict: "live", File: fmt.Sprintf("%d.json", pid)})
		}
		if err := p.Publish(b.Context(), l); err != nil {
			b.Fatal(err)
		}
	}
	config, sessions := catRegistry(b)
	for i := range 10 {
		pid := testproc.Sleeper(b)
		sock := filepath.Join(catSocketDir(b), "s.sock")
		socktest.Listen(b, sock, false)
		catWriteJSON(b, sessions, catFile(pid), catRecord(b, pid, fmt.Sprintf("proj-%d", i), sock))
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "CLAUDE_CONFIG_DIR=" + config, "PEERCTL_NATS=" + url, "PEERCTL_SERVE=off"}
	peerctl := peerctlWithMCP(b) // list --fleet runs in peerctl-mcp
	timed := func(args ...string) time.Duration {
		start := time.Now()
		if out, err := command(env, peerctl, args...).CombinedOutput(); err != nil {
			b.Fatalf("peerctl %q: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	fleet := []string{"list", "--fleet", "--json"}
	local := []string{"list", "--json"}
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	timed(fleet...) // warm the page cache, once each
	timed(local...)
	for b.Loop() {
		var fs, ls, ratios []time.Duration
		for i := range runs {
			var f, l time.Duration
			if i%2 == 0 {
				f, l = timed(fleet...), timed(local...)
			} else {
				l, f = timed(local...), timed(fleet...)
			}
			fs, ls = append(fs, f), append(ls, l)
			ratios = append(ratios, time.Duration(float64(f)/float64(l)*1000))
		}
		b.ReportMetric(float64(median(fs).Microseconds())/1000, "ms-fleet-100x10")
		b.ReportMetric(float64(median(ls).Microseconds())/1000, "ms-local-10")
		b.ReportMetric(float64(median(ratios))/1000, "ratio")
	}
}
