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
//     thread timed right after it (the floor: Codex's own client on the
//     same socket); medians over codexBenchRuns and the median of the
//     per-pair ratios;
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
		sendRatio, send, queue := pairs(b,
			func(i int) []string { return []string{peerctl, "send", s.ThreadID, "bench send " + strconv.Itoa(i)} }, env,
			func(i int) []string {
				return []string{bin, "queue", "--thread", s.ThreadID, "--message", "bench queue " + strconv.Itoa(i)}
			}, env)
		list := func(int) []string { return []string{peerctl, "list", "--json"} }
		listRatio, present, missing := pairs(b, list, env, list, absent)
		b.ReportMetric(ms(send), "send-ms")
		b.ReportMetric(ms(queue), "codex-queue-ms")
		b.ReportMetric(sendRatio, "send/codex-queue")
		b.ReportMetric(ms(present), "list-codex-ms")
		b.ReportMetric(ms(missing), "list-no-codex-ms")
		b.ReportMetric(listRatio, "list-codex/list-no-codex")
		b.Logf("send median %v, codex queue median %v, per-pair ratio median %.2f; list with Codex home %v, without %v, per-pair ratio median %.2f (%d pairs each)",
			send, queue, sendRatio, present, missing, listRatio, codexBenchRuns)
	}
}

// pairs times command a against command c (argv of run i) codexBenchRuns times, back to
// back, order alternating, after one warm-up of each, and returns the
// median of the per-pair ratios a/b and each one's median wall time. A
// run that fails fails the benchmark.
func pairs(b *testing.B, a func(i int) []string, aEnv []string, c func(i int) []string, cEnv []string) (ratio float64, ma, mc time.Duration) {
	b.Helper()
	run := func(argvOf func(int) []string, env []string, i int) time.Duration {
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
		return d
	}
	run(a, aEnv, -1)
	run(c, cEnv, -1)
	var as, cs []time.Duration
	var ratios []float64
	for i := range codexBenchRuns {
		var da, dc time.Duration
		if i%2 == 0 {
			da, dc = run(a, aEnv, i), run(c, cEnv, i)
		} else {
			dc, da = run(c, cEnv, i), run(a, aEnv, i)
		}
		as, cs = append(as, da), append(cs, dc)
		ratios = append(ratios, float64(da)/float64(dc))
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2], median(as), median(cs)
}
