package opencode

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkDeliver is one send with its receipt (event stream opened,
// prompt_async posted, message.updated awaited) against the fake server;
// BenchmarkBarePost the same POST alone, as curl would make it: the
// difference is what the receipt costs.
func BenchmarkDeliver(b *testing.B) {
	f := newFake(b)
	f.noAnswer = true
	target := session(b, f.addr())
	msg := message(b, "the API changed, rebase")
	p := NewPrompt(Config{})
	b.ResetTimer()
	for b.Loop() {
		rec, err := p.Deliver(context.Background(), target, msg)
		if err != nil || rec.Outcome != "delivered" {
			b.Fatalf("%+v %v", rec, err)
		}
	}
}

func BenchmarkBarePost(b *testing.B) {
	f := newFake(b)
	f.noEcho = true
	body := PromptBody(NewMessageID(time.Now()), Envelope("peerctl"), "the API changed, rebase")
	url := "http://" + f.addr() + "/session/" + sid + "/prompt_async"
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusNoContent {
			b.Fatalf("%v %v", resp, err)
		}
		resp.Body.Close()
	}
}

// BenchmarkRegistryRead reads a fake /proc of 200 opencode processes none
// of which is a session (`opencode run`), and the same with one server
// among them.
func BenchmarkRegistryRead(b *testing.B) {
	for _, withServer := range []bool{false, true} {
		name := "no server"
		if withServer {
			name = "one server"
		}
		b.Run(name, func(b *testing.B) {
			p := newFakeProc(b)
			for pid := 1000; pid < 1200; pid++ {
				p.add(b, pid, "/w", []string{"opencode", "run", "x"}) // not a session: read and skipped
			}
			if withServer {
				f := newFake(b)
				f.sessions = `[{"id":"` + sid + `","directory":"/w"}]`
				p.add(b, 999, "/w", []string{"opencode", "serve"}, portOf(b, f.addr()))
			}
			r := NewRegistry(p.db(), Auth{}, "")
			r.procRoot, r.uid, r.serverPIDOf = p.root, os.Getuid(), self
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
