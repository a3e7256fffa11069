//go:build unix

package acceptance

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/peerctl/peerctl/test/livecodex"
)

// codexBenchRuns is how many timed pairs each row of BenchmarkLiveCodex has.
const codexBenchRuns = 10

// BenchmarkLiveCodex (PEERCTL_LIVE=1; `make bench-codex`) measures, on a
// real Codex 0.171.0 TUI offline whose model is the stand-in:
//
//   - send: `peerctl send` to the thread, whole process, up to Codex's own
//     receipt (turn/started), against a bare `codex queue` to the same
//     thread timed beside it (the floor: Codex's own client on the same
//     socket); medians over codexBenchRuns and the medians of the per-pair
//     ratios of wall and of CPU time;
//   - list: `peerctl list --json` with the Codex home present (its daemon
//     up, the thread loaded) against the same with CODEX_HOME naming a
//     folder that does not exist: what listing Codex adds.
//
// Pairs run back to back, order alternating, so that load on this shared
// machine hits both runs of a pair. One iteration runs it all; use
// -benchtime=1x.
func BenchmarkLiveCodex(b *testing.B) {
	bin := livecodex.Require(b)
	root := livecodex.NewRoot(b, bin, nil)
	s := livecodex.Start(b, root, livecodex.Options{Label: "bench"})
	env := root.Env()
	absent := root.Env("CODEX_HOME=" + filepath.Join(root.Dir, "absent"))
	peerctl := peerctlBin(b)
	for b.Loop() {
		sendRatio, sendCPU, send, queue := pairs(b,
			func(i int) []string { return []string{peerctl, "send", s.ThreadID, "bench send " + strconv.Itoa(i)} }, env,
			func(i int) []string {
				return []string{bin, "queue", "--thread", s.ThreadID, "--message", "bench queue " + strconv.Itoa(i)}
			}, env)
		list := func(int) []string { return []string{peerctl, "list", "--json"} }
		listRatio, listCPU, present, missing := pairs(b, list, env, list, absent)
		reportPair(b, "send", "codex-queue", sendRatio, sendCPU, send, queue)
		reportPair(b, "list-codex", "list-no-codex", listRatio, listCPU, present, missing)
		b.Logf("send median %v, codex queue median %v, per-pair ratio median %.2f (CPU %.2f); list with Codex home %v, without %v, per-pair ratio median %.2f (CPU %.2f); %d pairs each",
			send, queue, sendRatio, sendCPU, present, missing, listRatio, listCPU, codexBenchRuns)
	}
}

// pairs times command a against command c (argv of run i) codexBenchRuns times, back to
// back, order alternating, after one warm-up of each, and returns the
// medians of the per-pair ratios a/c of wall time and of CPU time (the
// process's user + system time: the steadier one on a busy machine), and
// each one's median wall time. A run that fails fails the benchmark.
func pairs(b *testing.B, a func(i int) []string, aEnv []string, c func(i int) []string, cEnv []string) (ratio, cpuRatio float64, ma, mc time.Duration) {
	b.Helper()
	return settledPairs(b, nil, a, aEnv, c, cEnv)
}

// settledPairs is pairs with settle, when not nil, called before every run
// and outside its timing (e.g. to wait until the target session is idle
// again, so that no run is timed against the turn the one before started).
func settledPairs(b *testing.B, settle func(), a func(i int) []string, aEnv []string, c func(i int) []string, cEnv []string) (ratio, cpuRatio float64, ma, mc time.Duration) {
	b.Helper()
	return settledPairsN(b, codexBenchRuns, settle, a, aEnv, c, cEnv)
}

// settledPairsN is settledPairs with n pairs.
func settledPairsN(b *testing.B, n int, settle func(), a func(i int) []string, aEnv []string, c func(i int) []string, cEnv []string) (ratio, cpuRatio float64, ma, mc time.Duration) {
	b.Helper()
	type took struct{ wall, cpu time.Duration }
	run := func(argvOf func(int) []string, env []string, i int) took {
		if settle != nil {
			settle()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		argv := argvOf(i)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%q: %v\n%s", argv, err, out)
		}
		return took{d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	}
	run(a, aEnv, -1)
	run(c, cEnv, -1)
	var as, cs []time.Duration
	var ratios, cpus []float64
	for i := range n {
		var da, dc took
		if i%2 == 0 {
			da, dc = run(a, aEnv, i), run(c, cEnv, i)
		} else {
			dc, da = run(c, cEnv, i), run(a, aEnv, i)
		}
		as, cs = append(as, da.wall), append(cs, dc.wall)
		ratios = append(ratios, float64(da.wall)/float64(dc.wall))
		cpus = append(cpus, float64(da.cpu)/float64(max(dc.cpu, time.Microsecond)))
	}
	slices.Sort(ratios)
	slices.Sort(cpus)
	return ratios[len(ratios)/2], cpus[len(cpus)/2], median(as), median(cs)
}

// reportPair reports a pair's medians (NAME-ms, BASE-ms) and its per-pair
// ratio medians, wall and CPU (NAME/BASE, NAME/BASE-cpu).
func reportPair(b *testing.B, name, base string, ratio, cpu float64, a, baseline time.Duration) {
	b.ReportMetric(ms(a), name+"-ms")
	b.ReportMetric(ms(baseline), base+"-ms")
	b.ReportMetric(ratio, name+"/"+base)
	b.ReportMetric(cpu, name+"/"+base+"-cpu")
}
