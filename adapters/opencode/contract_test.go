package opencode

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

// The prompt transport passes the contract every transport passes,
// against the fake opencode server: the text part of the post is the
// message byte for byte.
func TestPromptContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, c transporttest.Case) transporttest.Setup {
		f := newFake(t)
		switch c.Far {
		case transporttest.Hang:
			f.promptHang = true
		case transporttest.Fail:
			f.promptStatus, f.promptBody = 500, `{"name":"UnknownError","data":{"message":"boom"}}`
		}
		target := transporttest.Session(t, domain.Record{Harness: Kind, Kind: KindServe, PID: os.Getpid(), ProcStart: "1",
			SessionID: sid, SocketPath: f.addr(), Cwd: "/w/a"})
		if c.Far == transporttest.Impostor {
			// The target (this process, where the fake listens) named at
			// an address another user's process holds, with a password
			// that must not reach it.
			im := transporttest.ListenAsOther(t, "127.0.0.1:0")
			target = transporttest.Session(t, domain.Record{Harness: Kind, Kind: KindServe, PID: os.Getpid(), ProcStart: "1",
				SessionID: sid, SocketPath: im.Addr, Cwd: "/w/a"})
			return transporttest.Setup{Transport: NewPrompt(Config{Auth: NewAuth("", "s3cret"), Timeout: c.Timeout}), Target: target,
				Received: im.Received}
		}
		return transporttest.Setup{Transport: NewPrompt(Config{Timeout: c.Timeout, Window: 10 * time.Second}), Target: target,
			Grace: time.Second, Received: func() []string {
				var got []string
				for _, b := range f.postBodies() {
					var body struct{ Parts []struct{ Text string } }
					if json.Unmarshal([]byte(b), &body) == nil && len(body.Parts) == 2 {
						got = append(got, body.Parts[1].Text)
					}
				}
				return got
			}}
	})
}
