package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// courierNode is a node whose send starts a courier (the trace's
// CourierStarting) that hands the message over once released.
type courierNode struct {
	app.Node
	release chan struct{}
}

func (n courierNode) Send(ctx context.Context, q wire.SendQuery) (wire.Sent, error) {
	done := func() {}
	if tr := app.SendTraceFrom(ctx); tr != nil && tr.CourierStarting != nil {
		done = tr.CourierStarting(q.Address, "claude -p")
	}
	<-n.release
	done()
	return wire.Sent{Receipt: wire.Receipt{OK: true, Outcome: "queued", Transport: "courier", Name: q.Address, SessionID: "26df9a5b", PID: 4652}}, nil
}

// While a send's courier starts, a terminal shows a live line on stderr
// saying so and for how long, cleared once the courier has handed the
// message over (issue 44: waits talk); not a terminal, or --json, nothing
// is said of it. A test of order: the courier hands the message over only
// once the line was seen.
func TestSendTellsTheCourierStartOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name           string
		terminal, json bool
	}{{"terminal", true, false}, {"not a terminal", false, false}, {"json", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut lockedBuffer
			ios := newIOStreams(strings.NewReader(""), &out, &errOut, func(string) string { return "" })
			ios.terminal = func(any) bool { return tc.terminal }
			n := courierNode{release: make(chan struct{})}
			opts := &sendOptions{io: ios, json: tc.json, serve: func() *serveClient { return nil },
				node:      func(domain.Dest) (app.Node, error) { return n, nil },
				allowedTo: func(context.Context, string, domain.Dest) error { return nil },
				query:     wire.SendQuery{Address: "proj-89", Text: "hi", Transport: "courier"}}
			ended := make(chan error, 1)
			go func() { ended <- runSend(context.Background(), opts) }()
			const line = `peerctl: starting the courier (claude -p) that hands the message to "proj-89": `
			if tc.terminal && !tc.json {
				require.Eventually(t, func() bool { return strings.Contains(errOut.String(), line) }, time.Minute, 10*time.Millisecond)
			}
			close(n.release)
			require.NoError(t, <-ended)
			if tc.terminal && !tc.json {
				assert.Regexp(t, `^(\r\x1b\[K`+strings.NewReplacer("(", `\(`, ")", `\)`).Replace(line)+`\d+s)+\r\x1b\[K$`, errOut.String(), "drawn in place, then cleared")
			} else {
				assert.Empty(t, errOut.String())
			}
			assert.Contains(t, out.String(), "queued", "the receipt")
		})
	}
}
