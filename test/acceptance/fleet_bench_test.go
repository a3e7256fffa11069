//go:build linux

package acceptance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// BenchmarkFleetList (hermetic; `make bench-serve`) times `list --fleet
// --json` over 100 nodes of 10 sessions each, published on an embedded
// NATS server (one server: the read is one ordered consumer either way),
// read from the bus directly (PEERCTL_SERVE=off: peerctl-mcp reads the
// bucket) and answered by a running service on the bus from its live view
// ("served"), against a local `list --json` of 10 live sessions, back to
// back in the same run (ABBA, BENCH_RUNS pairs, default 10), the ratio taken pair by
// pair (docs/PERFORMANCE.md, "The fleet"). One iteration runs it all once;
// use -benchtime=1x.
func BenchmarkFleetList(b *testing.B) {
	url := natstest.Start(b)
	bus, err := natsbus.Connect(natsbus.Settings{URLs: url, Name: "bench"}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	// A service on the bus (node bench-serve) answers list --fleet from its
	// live view ("served"); PEERCTL_SERVE=off reads the bus directly.
	peerctl := peerctlWithMCP(b) // list --fleet without a service runs in peerctl-mcp
	srv := newServeWorldB(b)
	srv.more = []string{"CLAUDE_CONFIG_DIR=" + srv.config, "PEERCTL_NATS=" + url, "PEERCTL_NODE=bench-serve"}
	srv.startServe(b)
	newBenchFleet(b, bus).grow(100) // refreshed: a run under load outlasts the presence's TTL
	config, sessions := catRegistry(b)
	for i := range 10 {
		pid := testproc.Sleeper(b)
		sock := filepath.Join(catSocketDir(b), "s.sock")
		socktest.Listen(b, sock, false)
		catWriteJSON(b, sessions, catFile(pid), catRecord(b, pid, fmt.Sprintf("proj-%d", i), sock))
	}
	served := append(srv.env(b), "CLAUDE_CONFIG_DIR="+config) // the last value of a variable counts
	env := append(srv.env(b), "CLAUDE_CONFIG_DIR="+config, "PEERCTL_SERVE=off")
	run := func(env []string, args ...string) []byte {
		out, err := command(env, peerctl, args...).CombinedOutput()
		if err != nil {
			b.Fatalf("peerctl %q: %v\n%s", args, err, out)
		}
		return out
	}
	timedIn := func(env []string, args ...string) time.Duration {
		start := time.Now()
		run(env, args...)
		return time.Since(start)
	}
	timed := func(args ...string) time.Duration { return timedIn(env, args...) }
	fleet := []string{"list", "--fleet", "--json"}
	local := []string{"list", "--json"}
	for deadline := time.Now().Add(time.Minute); bytes.Count(run(served, fleet...), []byte(`"host": "nats:`)) < 1000; {
		if time.Now().After(deadline) {
			b.Fatal("the service's view of the fleet did not hold every node within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	timed(fleet...) // warm the page cache, once each
	timed(local...)
	for b.Loop() {
		var fs, ss, ls, ratios, sratios []time.Duration
		for i := range runs {
			var f, sv, l time.Duration
			if i%2 == 0 {
				f, sv, l = timed(fleet...), timedIn(served, fleet...), timed(local...)
			} else {
				l, sv, f = timed(local...), timedIn(served, fleet...), timed(fleet...)
			}
			fs, ss, ls = append(fs, f), append(ss, sv), append(ls, l)
			ratios = append(ratios, time.Duration(float64(f)/float64(l)*1000))
			sratios = append(sratios, time.Duration(float64(sv)/float64(l)*1000))
		}
		b.ReportMetric(float64(median(fs).Microseconds())/1000, "ms-fleet-100x10")
		b.ReportMetric(float64(median(ss).Microseconds())/1000, "ms-served-100x10")
		b.ReportMetric(float64(median(ls).Microseconds())/1000, "ms-local-10")
		b.ReportMetric(float64(median(ratios))/1000, "ratio")
		b.ReportMetric(float64(median(sratios))/1000, "ratio-served")
	}
}
