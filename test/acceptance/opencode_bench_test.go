//go:build unix

package acceptance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	curlPost := func(i int) []string {
		body := opencode.PromptBody(opencode.NewMessageID(time.Now()), opencode.Envelope("bench"), "bench curl "+strconv.Itoa(i))
		return []string{curl, "-sS", "--fail", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json",
			"--data-binary", body, srv.URL + "/session/" + sid + "/prompt_async"}
	}
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
		list := func(int) []string { return []string{peerctl, "list", "--json"} }
		listRatio, listCPU, present, missing := pairs(b, list, env, list, absent)
		reportPair(b, "send", "curl-post", sendRatio, sendCPU, send, post)
		reportPair(b, "list-opencode", "list-no-opencode", listRatio, listCPU, present, missing)
		b.Logf("send median %v, curl POST median %v, per-pair ratio median %.2f (CPU %.2f); list with an opencode server %v, without %v, per-pair ratio median %.2f (CPU %.2f); %d pairs each",
			send, post, sendRatio, sendCPU, present, missing, listRatio, listCPU, codexBenchRuns)
	}
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
