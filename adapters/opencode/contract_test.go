package opencode

import (
	"encoding/json"
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
		target := transporttest.Session(t, domain.Record{Harness: Kind, Kind: KindServe, PID: 42, ProcStart: "1",
			SessionID: sid, SocketPath: f.addr(), Cwd: "/w/a"})
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
