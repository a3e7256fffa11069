//go:build unix

package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/opencode"
	"github.com/peerctl/peerctl/test/liveopencode"
)

// BenchmarkLiveOpencode (PEERCTL_LIVE=1; `make bench-opencode`) measures,
// on a real opencode-ai 1.18.33 `opencode serve` offline whose model is the
// live tests' stand-in (test/liveopencode):
//
//   - send: `peerctl send --transport prompt` to a session of the server,
//     whole process, up to opencode's own receipt (its message.updated
//     event for peerctl's message id), against a bare `curl` POST of the
//     same request (POST /session/{id}/prompt_async with a message id and
//     two text parts, the envelope and the text; 204) timed beside it;
//     before every run, outside its timing, the session is left to answer
//     every turn so far and go idle, so no run is timed against the turn
//     the one before started;
//   - list: `peerctl list --json` in the server's environment (its
//     database; the server is found in /proc, its port probed, its
//     sessions read) against the same with XDG_DATA_HOME naming a folder
//     that does not exist (no opencode process is of that database: the
//     walk over /proc still runs and skips the server, as it does for any
//     opencode process of another database).
//
// With PEERCTL_BENCH_BASE naming another peerctl binary (`make
// bench-opencode BENCH_BASE=<revision>` builds one), its send is timed
// too, in the same run: against the curl POST, and against this tree's
// send (the before/after ratio).
//
// Pairs as BenchmarkLiveCodex: codexBenchRuns back to back, order
// alternating, medians of the per-pair ratios of wall and CPU time. One
// iteration runs it all; use -benchtime=1x.
func BenchmarkLiveOpencode(b *testing.B) {
	bin := liveopencode.Require(b)
	peerctl := peerctlBin(b)
	root := liveopencode.NewRoot(b, bin)
	srv := root.Serve(b, root.Workdir(b, "bench"))
	sid := liveopencode.NewSession(b, srv.URL)
	env := root.Env()
	absent := root.Env("XDG_DATA_HOME=" + filepath.Join(root.Dir, "absent"))
	curl := curlBin(b)
	idle := func() { opencodeSettle(b, srv.URL, sid) }
	curlPost := curlPostOf(curl, srv.URL, sid)
	for b.Loop() {
		sendRatio, sendCPU, send, post := settledPairs(b, idle,
			func(i int) []string {
				return []string{peerctl, "send", "--transport", "prompt", "--from", "bench", sid, "bench send " + strconv.Itoa(i)}
			}, env, curlPost, env)
		if base := os.Getenv("PEERCTL_BENCH_BASE"); base != "" {
			sendOf := func(bin, label string) func(int) []string {
				return func(i int) []string {
					return []string{bin, "send", "--transport", "prompt", "--from", "bench", sid, "bench " + label + " " + strconv.Itoa(i)}
				}
			}
			baseRatio, baseCPU, baseSend, basePost := settledPairs(b, idle, sendOf(base, "base"), env, curlPost, env)
			nowRatio, nowCPU, nowSend, baseSend2 := settledPairs(b, idle, sendOf(peerctl, "now"), env, sendOf(base, "base"), env)
			reportPair(b, "base-send", "base-curl-post", baseRatio, baseCPU, baseSend, basePost)
			reportPair(b, "paired-send", "paired-base-send", nowRatio, nowCPU, nowSend, baseSend2)
			b.Logf("base (%s): send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f); this tree's send / base's: medians %v / %v, per-pair ratio median %.2f (CPU %.2f)",
				base, baseSend, basePost, baseRatio, baseCPU, nowSend, baseSend2, nowRatio, nowCPU)
		}
		servedRatio, servedCPU, served, servedPost, oneShotRatio, oneShotCPU, oneShot, serviceCPU := throughServe(b, root, peerctl, sid, env, idle, curlPost)
		reportPair(b, "serve-send", "curl-post", servedRatio, servedCPU, served, servedPost)
		reportPair(b, "serve-send", "one-shot-send", oneShotRatio, oneShotCPU, served, oneShot)
		b.ReportMetric(ms(serviceCPU), "service-cpu-ms/send")
		b.Logf("through peerctl serve: send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f, the client's); against a one-shot send (PEERCTL_SERVE=off) median %v, per-pair ratio median %.2f (CPU %.2f); the service's own CPU %v a send",
			served, servedPost, servedRatio, servedCPU, oneShot, oneShotRatio, oneShotCPU, serviceCPU)
		list := func(int) []string { return []string{peerctl, "list", "--json"} }
		listRatio, listCPU, present, missing := pairs(b, list, env, list, absent)
		reportPair(b, "send", "curl-post", sendRatio, sendCPU, send, post)
		reportPair(b, "list-opencode", "list-no-opencode", listRatio, listCPU, present, missing)
		b.Logf("send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f); list with an opencode server %v, without %v, per-pair ratio median %.2f (CPU %.2f); %d pairs each",
			send, post, sendRatio, sendCPU, present, missing, listRatio, listCPU, codexBenchRuns)
	}
}

// opencodeSendPairs is how many pairs BenchmarkLiveOpencodeSend times.
const opencodeSendPairs = 20

// BenchmarkLiveOpencodeSend (PEERCTL_LIVE=1; `make bench-opencode`) is
// the cold send alone, with no peerctl serve running: `peerctl send
// --transport prompt` up to opencode's receipt against the bare curl POST
// of BenchmarkLiveOpencode, opencodeSendPairs pairs, each run settled
// first, order alternating. peerctl runs from four copies of its binary
// in turn (identical binaries in different files differ by a few percent
// in CPU on a VM), and so does the base of PEERCTL_BENCH_BASE, whose send
// is then timed against curl and against this tree's in the same run.
func BenchmarkLiveOpencodeSend(b *testing.B) {
	bin := liveopencode.Require(b)
	now := binCopies(b, peerctlBin(b), "peerctl", 4)
	root := liveopencode.NewRoot(b, bin)
	srv := root.Serve(b, root.Workdir(b, "bench"))
	sid := liveopencode.NewSession(b, srv.URL)
	env := root.Env()
	curl := curlBin(b)
	idle := func() { opencodeSettle(b, srv.URL, sid) }
	curlPost := curlPostOf(curl, srv.URL, sid)
	sendOf := func(bins []string, label string) func(int) []string {
		return func(i int) []string {
			return []string{bins[(i+len(bins))%len(bins)], "send", "--transport", "prompt", "--from", "bench", sid, "bench " + label + " " + strconv.Itoa(i)}
		}
	}
	for b.Loop() {
		ratio, cpu, send, post := settledPairsN(b, opencodeSendPairs, idle, sendOf(now, "now"), env, curlPost, env)
		reportPair(b, "send", "curl-post", ratio, cpu, send, post)
		b.Logf("cold send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f); %d pairs", send, post, ratio, cpu, opencodeSendPairs)
		if base := os.Getenv("PEERCTL_BENCH_BASE"); base != "" {
			was := binCopies(b, base, "peerctl-base", 4)
			bRatio, bCPU, bSend, bPost := settledPairsN(b, opencodeSendPairs, idle, sendOf(was, "base"), env, curlPost, env)
			pRatio, pCPU, pNow, pWas := settledPairsN(b, opencodeSendPairs, idle, sendOf(now, "now"), env, sendOf(was, "base"), env)
			reportPair(b, "base-send", "base-curl-post", bRatio, bCPU, bSend, bPost)
			reportPair(b, "paired-send", "paired-base-send", pRatio, pCPU, pNow, pWas)
			b.Logf("base (%s): send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f); this tree's send / base's: medians %v / %v, per-pair ratio median %.2f (CPU %.2f)",
				base, bSend, bPost, bRatio, bCPU, pNow, pWas, pRatio, pCPU)
		}
	}
}

// curlPostOf is the argv of run i of the bare curl POST the opencode
// benchmarks time: POST /session/{sid}/prompt_async on the server at url
// with a message id and two text parts, the envelope and the text, as
// peerctl sends them.
func curlPostOf(curl, url, sid string) func(i int) []string {
	return func(i int) []string {
		body := opencode.PromptBody(opencode.NewMessageID(time.Now()), opencode.Envelope("bench"), "bench curl "+strconv.Itoa(i))
		return []string{curl, "-sS", "--fail", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json",
			"--data-binary", body, url + "/session/" + sid + "/prompt_async"}
	}
}

// binCopies are n copies of the program at bin, in a folder of the
// benchmark's, named name-0 … name-(n-1).
func binCopies(b *testing.B, bin, name string, n int) []string {
	b.Helper()
	raw, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	out := make([]string, n)
	for i := range out {
		out[i] = filepath.Join(dir, name+"-"+strconv.Itoa(i))
		if err := os.WriteFile(out[i], raw, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// throughServe times, with a `peerctl serve` of env's state running,
// `peerctl send` to session sid with the default transport (the service
// carries it: its warm courier keeps the server's event stream open)
// against the curl POST, and against the same send one-shot
// (PEERCTL_SERVE=off: this process does it all). serviceCPU is the
// service's own CPU time per send carried (user and system, from its
// /proc stat), which the client's CPU ratio does not count.
func throughServe(b *testing.B, root *liveopencode.Root, peerctl, sid string, env []string, idle func(), curlPost func(int) []string) (ratio, cpu float64, served, post time.Duration, oneShotRatio, oneShotCPU float64, oneShot time.Duration, serviceCPU time.Duration) {
	b.Helper()
	l := &liveServe{state: b.TempDir(), run: catSocketDir(b)}
	l.env = append(slices.Clone(env), "XDG_STATE_HOME="+l.state, "XDG_RUNTIME_DIR="+l.run)
	b.Cleanup(l.kill)
	l.start(b)
	off := append(slices.Clone(l.env), "PEERCTL_SERVE=off")
	sendOf := func(label string) func(int) []string {
		return func(i int) []string {
			return []string{peerctl, "send", "--from", "bench", sid, "bench " + label + " " + strconv.Itoa(i)}
		}
	}
	before := procCPU(b, l.srv.Process.Pid)
	ratio, cpu, served, post = settledPairs(b, idle, sendOf("served"), l.env, curlPost, l.env)
	serviceCPU = (procCPU(b, l.srv.Process.Pid) - before) / (codexBenchRuns + 1)
	oneShotRatio, oneShotCPU, served2, oneShot := settledPairs(b, idle, sendOf("served"), l.env, sendOf("one-shot"), off)
	_ = served2
	l.kill()
	return ratio, cpu, served, post, oneShotRatio, oneShotCPU, oneShot, serviceCPU
}

// procCPU is process pid's user and system time so far (/proc/<pid>/stat
// fields 14 and 15, in clock ticks of 1/100 s).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatalf("the service's CPU time: %v", err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// curlBin is curl on PATH, or the benchmark fails.
func curlBin(b *testing.B) string {
	b.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		b.Fatalf("the opencode benchmark's baseline needs curl: %v", err)
	}
	return p
}

// opencodeSettle waits until every user turn of session sid has an
// answer with text and the server lists no session running (GET
// /session/status is {}), failing after opencodeTurn.
func opencodeSettle(b *testing.B, url, sid string) {
	b.Helper()
	deadline := time.Now().Add(opencodeTurn)
	for {
		msgs := liveopencode.Messages(b, url, sid)
		done := true
		for _, m := range msgs {
			if m.Role == "user" && !answered(msgs, m.ID) {
				done = false
			}
		}
		if done {
			var busy map[string]any
			liveopencode.Get(b, url, "/session/status", &busy)
			if len(busy) == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("session %s not idle with every turn answered after %s", sid, opencodeTurn)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
