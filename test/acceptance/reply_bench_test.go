package acceptance

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// BenchmarkLiveReplies (PEERCTL_LIVE=1; `make bench-replies`) measures, on
// real Claude Code offline, against one real session whose model is the
// scripted stand-in of TestLiveReplies:
//
//   - relay-send: a warm `peerctl relay`'s send, from writing the request
//     line to reading its receipt line (resolve, verify, SendMessage,
//     Claude Code's result), median of 50 sends the session does not
//     answer; reported also as a ratio to the 50 ms target;
//   - reply: the session's own reply time as a warm relay sees it, from
//     the receipt line to the reply's inbound line (median of 10);
//   - await-extra: what `peerctl send --await-reply` adds beyond that reply
//     time: its whole process wall time (courier start, send, transcript
//     confirmation, reply) minus the reply time (medians of 5); reported
//     also as a ratio to the 1.2 s target.
//
// One iteration runs it all once; use -benchtime=1x.
func BenchmarkLiveReplies(b *testing.B) {
	bin := livecc.Require(b, KnownNewestClaudeCode)
	srv := scriptedmodel.Start(b, replyScript)
	s := livecc.Start(b, bin, livecc.Options{ModelURL: srv.URL(), ModelKey: srv.Key(), Settings: livecc.ReplySettings(), WaitSettled: true})
	env := append(livecc.Scrub(os.Environ()), "HOME="+b.TempDir(), "CLAUDE_CONFIG_DIR="+s.ConfigDir, "PEERCTL_CLAUDE="+bin)
	for b.Loop() {
		r := startRelay(b, env)
		var sends, replies []time.Duration
		for i := range 50 {
			start := time.Now()
			r.write(b, map[string]any{"id": i, "to": s.SessionID, "text": silentPrefix + strconv.Itoa(i)})
			for m := r.next(b); m["type"] != "receipt"; m = r.next(b) {
				if m["type"] == "refusal" {
					b.Fatalf("send %d refused: %v", i, m)
				}
			}
			sends = append(sends, time.Since(start))
		}
		for i := range 10 {
			r.write(b, map[string]any{"id": i, "to": s.SessionID, "text": "bench " + strconv.Itoa(i)})
			var receipt time.Time
			for {
				m := r.next(b)
				if m["type"] == "receipt" {
					receipt = time.Now()
				}
				if m["type"] == "inbound" && m["text"] == "pong: bench "+strconv.Itoa(i) {
					replies = append(replies, time.Since(receipt))
					break
				}
			}
		}
		_ = r.stdin.Close()
		<-r.done
		var awaits []time.Duration
		for i := range 5 {
			res := runPeerctl(b, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--await-reply=60s", s.SessionID, fmt.Sprintf("await %d", i))
			if res.Code != 0 {
				b.Fatalf("await-reply: exit %d: %s", res.Code, res.Stderr)
			}
			awaits = append(awaits, res.Elapsed)
		}
		send, reply, await := median(sends), median(replies), median(awaits)
		b.ReportMetric(ms(send), "relay-send-ms")
		b.ReportMetric(ms(send)/50, "relay-send/50ms")
		b.ReportMetric(ms(reply), "reply-ms")
		b.ReportMetric(ms(await), "await-wall-ms")
		b.ReportMetric(ms(await-reply), "await-extra-ms")
		b.ReportMetric(ms(await-reply)/1200, "await-extra/1.2s")
		b.Logf("relay send median %v [%v..%v] over %d; reply median %v; await-reply wall median %v",
			send, slices.Min(sends), slices.Max(sends), len(sends), reply, await)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
