//go:build linux

package acceptance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/natsbus"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// BenchmarkFleetList (hermetic; `make bench-serve`) times `list --fleet
// --json` over 100 nodes of 10 sessions each (1,000 sessions, about 565 KB
// of output), read from the bus directly (PEERCTL_SERVE=off: peerctl-mcp
// reads the bucket) and answered by a running service on the bus from its
// live view ("served"), against a local `list --json` of this machine's 10
// live sessions (the comparison: the list a user runs here, not
// one of as many sessions), back to back in the same run (ABBA, BENCH_RUNS
// rounds, default 10), the ratios taken round by round; wall time, and the
// command's own CPU (user + system: the process's, not the service's).
// Two buses: "embedded", one nats-server in the test (the read is one
// ordered consumer either way), and "cluster3", the three-server
// JetStream cluster of the live tests (real nats-server processes,
// natscluster_test.go). BENCH_BEFORE=DIR (a folder with another build's
// peerctl and peerctl-mcp) times that build too, its own service on the
// same bus ("served-before"), in the same rounds (docs/PERFORMANCE.md,
// "The fleet"). One iteration runs it all once; use -benchtime=1x.
func BenchmarkFleetList(b *testing.B) {
	b.Run("embedded", func(b *testing.B) { benchFleetList(b, natstest.Start(b)) })
	b.Run("cluster3", func(b *testing.B) {
		url := sharedNATSCluster(b)
		waitHealthy(b)
		benchFleetList(b, url)
	})
}

func benchFleetList(b *testing.B, url string) {
	bus, err := natsbus.Connect(natsbus.Settings{URLs: url, Name: "bench"}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer bus.Close()
	// A service on the bus (node bench-serve-N) answers list --fleet from
	// its live view ("served"); PEERCTL_SERVE=off reads the bus directly.
	// Each run's services have names of their own: the last run's are
	// still live on a shared cluster until their presence expires.
	benchRuns++
	peerctl := peerctlWithMCP(b) // list --fleet without a service runs in peerctl-mcp
	srv := newServeWorldB(b)
	srv.more = []string{"CLAUDE_CONFIG_DIR=" + srv.config, "PEERCTL_NATS=" + url, fmt.Sprintf("PEERCTL_NODE=bench-serve-%d", benchRuns)}
	srv.startServe(b)
	newBenchFleet(b, bus).grow(100) // refreshed: a run under load outlasts the presence's TTL
	config, sessions := catRegistry(b)
	for i := range 10 {
		pid := testproc.Sleeper(b)
		sock := filepath.Join(catSocketDir(b), "s.sock")
		socktest.Listen(b, sock, false)
		catWriteJSON(b, sessions, catFile(pid), catRecord(b, pid, fmt.Sprintf("proj-%d", i), sock))
	}
	type series struct {
		name string
		bin  string
		env  []string
		args []string
		wall []time.Duration
		cpu  []time.Duration
	}
	fleet := []string{"list", "--fleet", "--json"}
	// A served command is peerctl alone (no peerctl-mcp beside it or on
	// PATH): it fails rather than read the bus when the service does not
	// answer, so every served figure is the service's.
	all := []*series{
		{name: "fleet", bin: peerctl, env: append(srv.env(b), "CLAUDE_CONFIG_DIR="+config, "PEERCTL_SERVE=off"), args: fleet},
		// The last value of a variable counts.
		{name: "served", bin: aloneCopy(b, peerctl), env: append(srv.env(b), "CLAUDE_CONFIG_DIR="+config, "PATH=/nonexistent"), args: fleet},
	}
	if dir := os.Getenv("BENCH_BEFORE"); dir != "" {
		all = append(all, &series{name: "served-before", bin: aloneCopy(b, filepath.Join(dir, "peerctl")), env: append(beforeService(b, dir, url), "PATH=/nonexistent"), args: fleet})
	}
	local := &series{name: "local", bin: peerctl, env: all[0].env, args: []string{"list", "--json"}}
	all = append(all, local)
	run := func(s *series) {
		var out bytes.Buffer
		cmd := command(s.env, s.bin, s.args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %q: %v\n%s", s.bin, s.args, err, out.Bytes())
		}
		s.wall = append(s.wall, time.Since(start))
		s.cpu = append(s.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	for _, s := range all[1 : len(all)-1] { // each service's view holds every node
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			out, _ := command(s.env, s.bin, s.args...).Output()
			if bytes.Count(out, []byte(`"host": "nats:`)) >= 1000 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s: the service's view of the fleet did not hold every node within a minute", s.name)
			}
		}
	}
	runs := 10
	if n, err := strconv.Atoi(os.Getenv("BENCH_RUNS")); err == nil && n >= 3 {
		runs = n
	}
	for _, s := range all { // warm the page cache, once each
		run(s)
		s.wall, s.cpu = nil, nil
	}
	for b.Loop() {
		for i := range runs {
			for k := range all {
				if i%2 == 1 {
					k = len(all) - 1 - k
				}
				run(all[k])
			}
		}
		for _, s := range all {
			b.ReportMetric(float64(median(s.wall).Microseconds())/1000, "ms-"+s.name)
			b.ReportMetric(float64(median(s.cpu).Microseconds())/1000, "cpu-ms-"+s.name)
			if s == local {
				continue
			}
			var ratios, cpus []time.Duration
			for i := range s.wall {
				ratios = append(ratios, time.Duration(float64(s.wall[i])/float64(local.wall[i])*1000))
				cpus = append(cpus, time.Duration(float64(s.cpu[i])/float64(max(local.cpu[i], time.Millisecond))*1000))
			}
			b.ReportMetric(float64(median(ratios))/1000, "ratio-"+s.name)
			b.ReportMetric(float64(median(cpus))/1000, "cpu-ratio-"+s.name)
		}
	}
}

// benchRuns counts benchFleetList's runs in this process.
var benchRuns int

// aloneCopy is a copy of the program bin in a folder of its own.
func aloneCopy(b *testing.B, bin string) string {
	data, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	alone := filepath.Join(b.TempDir(), "peerctl")
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		b.Fatal(err)
	}
	return alone
}

// beforeService starts dir's build's peerctl serve on the bus url (node
// bench-before-N, folders of its own) and returns the environment of a
// command of that build asking it.
func beforeService(b *testing.B, dir, url string) []string {
	w := newServeWorldB(b)
	w.more = []string{"CLAUDE_CONFIG_DIR=" + w.config, "PEERCTL_NATS=" + url, fmt.Sprintf("PEERCTL_NODE=bench-before-%d", benchRuns)}
	cmd := exec.Command(filepath.Join(dir, "peerctl"), "serve")
	cmd.Env = w.env(b)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return w.env(b)
}
