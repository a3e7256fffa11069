//go:build unix

package acceptance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/test/livecc"
	"github.com/peerctl/peerctl/test/scriptedmodel"
)

// BenchmarkLiveReplies (PEERCTL_LIVE=1; `make bench-replies`) measures, on
// real Claude Code offline, against one real session whose model is the
// scripted stand-in of TestLiveReplies:
//
//   - relay-send: a warm `peerctl relay`'s send, from writing the request
//     line to reading its receipt line (resolve, verify, SendMessage,
//     Claude Code's result), median of 20 sends the session does not
//     answer (with the 10 below, 30 from one courier to one session: the
//     burst Claude Code's own pacer allows, docs/CLAUDE-CODE-FACTS.md);
//     reported also as a ratio to the 50 ms target and, pair by
//     pair, to courier-turn: one send on a warm courier through the Go API
//     right after it (Claude Code's own share of a send);
//   - reply: the session's own reply time as a warm relay sees it, from
//     the receipt line to the reply's inbound line (median of 10);
//   - await-extra: what `peerctl send --await-reply` adds beyond that reply
//     time: its whole process wall time (courier start, send, transcript
//     confirmation, reply) minus the reply time (medians of 5); reported
//     also as a ratio to the 1.2 s target, and less a plain one-shot send
//     timed right after each (what hearing the reply adds to a send).
//
// One iteration runs it all once; use -benchtime=1x.
// relaySends is how many timed relay sends BenchmarkLiveReplies makes: with
// its 10 replies, 30 messages from one courier to one session, the burst
// Claude Code's sender pacer allows before it refuses ("Too many messages
// to this session just now", 2.1.328 and 2.1.332).
const relaySends = 20

func BenchmarkLiveReplies(b *testing.B) {
	bin := livecc.Require(b, KnownNewestClaudeCode)
	srv := scriptedmodel.Start(b, replyScript)
	s := livecc.Start(b, bin, livecc.Options{ModelURL: srv.URL(), ModelKey: srv.Key(), Settings: livecc.ReplySettings(), WaitSettled: true})
	env := append(livecc.Scrub(os.Environ()), "HOME="+b.TempDir(), "CLAUDE_CONFIG_DIR="+s.ConfigDir, "PEERCTL_CLAUDE="+bin)
	for b.Loop() {
		r := startRelay(b, env)
		// The yardstick, timed in pairs with the relay's sends: one turn of
		// a warm courier driven through the Go API (no registry read, no
		// resolve, no JSON lines): Claude Code's own share of a send.
		raw, err := courierexec.New(courierexec.Config{Program: bin, Env: env}).Start(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := raw.Send(context.Background(), s.SocketPath, silentPrefix+"warm-up"); err != nil {
			b.Fatal(err)
		}
		var sends, turns, replies []time.Duration
		var ratios []float64
		for i := range relaySends {
			start := time.Now()
			r.write(b, map[string]any{"id": i, "to": s.SessionID, "text": silentPrefix + strconv.Itoa(i)})
			for m := r.next(b); m["type"] != "receipt"; m = r.next(b) {
				if m["type"] == "refusal" {
					b.Fatalf("send %d refused: %v", i, m)
				}
			}
			send := time.Since(start)
			start = time.Now()
			if _, err := raw.Send(context.Background(), s.SocketPath, silentPrefix+"raw "+strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
			turn := time.Since(start)
			sends, turns = append(sends, send), append(turns, turn)
			ratios = append(ratios, float64(send)/float64(turn))
		}
		_ = raw.Close()
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
		// Paired with a plain one-shot send (courier start, send, the
		// transcript's confirmation), which --await-reply does first.
		var awaits, oneShots []time.Duration
		for i := range 5 {
			res := runPeerctl(b, runOpts{Env: env, Timeout: 120 * time.Second}, "send", "--await-reply=60s", s.SessionID, fmt.Sprintf("await %d", i))
			if res.Code != 0 {
				b.Fatalf("await-reply: exit %d: %s", res.Code, res.Stderr)
			}
			awaits = append(awaits, res.Elapsed)
			res = runPeerctl(b, runOpts{Env: env, Timeout: 120 * time.Second}, "send", s.SessionID, silentPrefix+fmt.Sprintf("one-shot %d", i))
			if res.Code != 0 {
				b.Fatalf("one-shot send: exit %d: %s", res.Code, res.Stderr)
			}
			oneShots = append(oneShots, res.Elapsed)
		}
		send, turn, reply, await, oneShot := median(sends), median(turns), median(replies), median(awaits), median(oneShots)
		slices.Sort(ratios)
		b.ReportMetric(ms(send), "relay-send-ms")
		b.ReportMetric(ms(turn), "courier-turn-ms")
		b.ReportMetric(ratios[len(ratios)/2], "relay-send/courier-turn")
		b.ReportMetric(ms(send)/50, "relay-send/50ms")
		b.ReportMetric(ms(oneShot), "one-shot-send-ms")
		b.ReportMetric(ms(await-reply-oneShot), "await-extra-beyond-send-ms")
		b.ReportMetric(ms(reply), "reply-ms")
		b.ReportMetric(ms(await), "await-wall-ms")
		b.ReportMetric(ms(await-reply), "await-extra-ms")
		b.ReportMetric(ms(await-reply)/1200, "await-extra/1.2s")
		b.Logf("relay send median %v [%v..%v] over %d; courier turn median %v; relay/turn per pair median %.3f [%.3f..%.3f]; reply median %v; await-reply wall median %v; one-shot send median %v",
			send, slices.Min(sends), slices.Max(sends), len(sends), turn, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], reply, await, oneShot)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
