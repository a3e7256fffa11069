//go:build unix

package acceptance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/outbox"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testproc"
)

// serveSends is how many timed sends of each kind BenchmarkLiveServe
// makes: 20 through the warm courier stays below Claude Code's burst of 30
// messages from one sender process to one session (docs/CLAUDE-CODE-FACTS.md).
const serveSends = 20

// BenchmarkLiveServe (PEERCTL_LIVE=1; `make bench-serve`) measures, on
// real Claude Code offline against one real session, whole `peerctl send`
// processes with the default transport and confirmation: through a running
// `peerctl serve` (its warm courier) and one-shot (PEERCTL_SERVE=off: a
// courier started for the send), in pairs, order alternating; medians of
// serveSends each, and warm/one-shot as the ratio of the medians and the
// median of the per-pair ratios. One iteration runs it all once; use
// -benchtime=1x.
func BenchmarkLiveServe(b *testing.B) {
	bin := livecc.Require(b, KnownNewestClaudeCode)
	s := livecc.Start(b, bin, livecc.Options{WaitSettled: true})
	for b.Loop() {
		l := newLiveServe(b, s.ConfigDir, bin)
		l.start(b)
		off := append(slices.Clone(l.env), "PEERCTL_SERVE=off")
		send := func(env []string, text string) time.Duration {
			r := runPeerctl(b, runOpts{Env: env, Timeout: 120 * time.Second}, "send", s.SessionID, text)
			if r.Code != 0 {
				b.Fatalf("send: exit %d: %s", r.Code, r.Stderr)
			}
			return r.Elapsed
		}
		send(l.env, "warm-up") // the service's courier starts
		var warm, cold []time.Duration
		var ratios []float64
		for i := range serveSends {
			var w, c time.Duration
			if i%2 == 0 {
				w, c = send(l.env, "warm "+strconv.Itoa(i)), send(off, "one-shot "+strconv.Itoa(i))
			} else {
				c, w = send(off, "one-shot "+strconv.Itoa(i)), send(l.env, "warm "+strconv.Itoa(i))
			}
			warm, cold = append(warm, w), append(cold, c)
			ratios = append(ratios, float64(w)/float64(c))
		}
		slices.Sort(ratios)
		wm, cm := median(warm), median(cold)
		b.ReportMetric(ms(wm), "warm-send-ms")
		b.ReportMetric(ms(cm), "one-shot-send-ms")
		b.ReportMetric(float64(wm)/float64(cm), "warm/one-shot")
		b.ReportMetric(ratios[len(ratios)/2], "warm/one-shot-per-pair")
		b.Logf("warm send median %v [%v..%v]; one-shot median %v [%v..%v]; warm/one-shot %.3f (per pair median %.3f [%.3f..%.3f]) over %d pairs",
			wm, slices.Min(warm), slices.Max(warm), cm, slices.Min(cold), slices.Max(cold), float64(wm)/float64(cm),
			ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], serveSends)
		l.kill()
	}
}

// BenchmarkServeOutbox (`make bench-serve`; hermetic: the fake claude as
// the warm courier, recording listeners as the sessions) stores
// SERVE_BENCH_MESSAGES (default 1000) durable sends to 10 sessions that
// are not there, then brings the sessions up and times the service
// delivering every one: throughput, the service's peak RSS (VmHWM), and a
// check that each session got its messages once each, in order.
func BenchmarkServeOutbox(b *testing.B) {
	total := 1000
	if v := os.Getenv("SERVE_BENCH_MESSAGES"); v != "" {
		var err error
		if total, err = strconv.Atoi(v); err != nil || total < 10 {
			b.Fatalf("SERVE_BENCH_MESSAGES=%q: want a number of at least 10", v)
		}
	}
	const targets = 10
	for b.Loop() {
		w := newServeWorldB(b)
		w.startServe(b)
		start := time.Now()
		for i := range total {
			r := runPeerctl(b, runOpts{Env: w.env(b)}, "--config-dir", w.config, "send", "--durable", "--no-confirm",
				fmt.Sprintf("bench-%d", i%targets), fmt.Sprintf("seq=%d for bench-%d", i, i%targets))
			if r.Code != 0 {
				b.Fatalf("durable send %d: exit %d: %s", i, r.Code, r.Stderr)
			}
		}
		stored := time.Since(start)
		storedRSS := vmHWM(b, w.srv.Process.Pid)
		listeners := make([]*socktest.Listener, targets)
		start = time.Now()
		for i := range targets {
			pid := testproc.Sleeper(b)
			sock := filepath.Join(catSocketDir(b), "s.sock")
			listeners[i] = socktest.Listen(b, sock, false)
			catWriteJSON(b, w.sessions, catFile(pid), catRecord(b, pid, fmt.Sprintf("bench-%d", i), sock))
		}
		deadline := time.Now().Add(30 * time.Minute)
		for {
			st, err := outbox.OpenReadOnly(context.Background(), w.db())
			if err == nil {
				left, _ := st.List(context.Background(), ports.OutboxFilter{States: []domain.OutboxState{domain.OutboxStored, domain.OutboxDelivering}, Limit: 1})
				_ = st.Close()
				if len(left) == 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				b.Fatal("not every message was delivered in 30 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
		delivered := time.Since(start)
		rss := vmHWM(b, w.srv.Process.Pid)
		for i, l := range listeners {
			frames := l.Frames()
			if len(frames) != total/targets {
				b.Fatalf("bench-%d got %d messages, want %d", i, len(frames), total/targets)
			}
			last := -1
			for _, f := range frames {
				var n int
				_, rest, _ := strings.Cut(string(f), "seq=")
				if _, err := fmt.Sscanf(rest, "%d", &n); err != nil || n <= last {
					b.Fatalf("bench-%d: out of order or twice: message %d after %d", i, n, last)
				}
				last = n
			}
		}
		start = time.Now()
		w.stopServe(b)
		stop := time.Since(start)
		b.ReportMetric(float64(total)/stored.Seconds(), "stored/s")
		b.ReportMetric(float64(total)/delivered.Seconds(), "delivered/s")
		b.ReportMetric(float64(rss)/1024, "serve-peak-rss-MiB")
		b.ReportMetric(float64(storedRSS)/1024, "serve-peak-rss-stored-MiB")
		b.ReportMetric(stop.Seconds(), "serve-stop-s")
		b.Logf("%d durable sends stored in %v (%.1f/s, whole processes); delivered to %d sessions in %v (%.1f/s), in order, none twice; service peak RSS %.1f MiB (%.1f MiB once all were stored); SIGTERM to its end %v",
			total, stored.Round(time.Millisecond), float64(total)/stored.Seconds(), targets, delivered.Round(time.Millisecond),
			float64(total)/delivered.Seconds(), float64(rss)/1024, float64(storedRSS)/1024, stop.Round(time.Millisecond))
	}
}

// vmHWM is the process's peak resident set size in KiB (/proc/<pid>/status).
func vmHWM(b *testing.B, pid int) int {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
