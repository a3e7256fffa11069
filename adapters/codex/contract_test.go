package codex

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp/codexapptest"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

// The app-server transport passes the contract every transport passes,
// against the fake daemon: the text the thread receives after the
// envelope's header line is the message byte for byte.
func TestAppServerContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, c transporttest.Case) transporttest.Setup {
		var (
			mu   sync.Mutex
			got  []string
			turn = map[string]any{"id": "turn-1", "status": "inProgress", "items": []any{}}
		)
		f := codexapptest.Start(t, map[string]codexapptest.Handler{
			"thread/loaded/list": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
				return map[string]any{"data": []string{threadA}}, "", true
			},
			"thread/resume": func(*codexapptest.Peer, codexapptest.Msg) (any, string, bool) {
				return map[string]any{"thread": map[string]any{"id": threadA, "status": map[string]any{"type": "idle"}}}, "", true
			},
			"turn/start": func(p *codexapptest.Peer, m codexapptest.Msg) (any, string, bool) {
				var params struct {
					Input []struct{ Text string } `json:"input"`
				}
				_ = json.Unmarshal(m.Params, &params)
				if c.Far == transporttest.Fail {
					return nil, "the thread refuses input", true
				}
				if len(params.Input) == 1 {
					_, text, _ := strings.Cut(params.Input[0].Text, "\n")
					mu.Lock()
					got = append(got, text)
					mu.Unlock()
				}
				if c.Far == transporttest.Hang {
					return nil, "", false
				}
				go func() { _ = p.Notify("turn/started", map[string]any{"threadId": threadA, "turn": turn}) }()
				return map[string]any{"turn": turn}, "", true
			},
		})
		cfg := Config{Home: f.Home, dirs: []string{f.Dir}, Timeout: c.Timeout, Window: 10 * time.Second}
		target := transporttest.Session(t, domain.Record{Harness: Kind, Kind: KindClient,
			PID: 42, SessionID: threadA, SocketPath: f.Socket, Cwd: "/w/a"})
		return transporttest.Setup{Transport: NewAppServer(cfg), Target: target, Grace: time.Second,
			Received: func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), got...)
			}}
	})
}
