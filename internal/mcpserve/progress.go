package mcpserve

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports/wire"
)

// withProgress runs h with a send trace (app.SendTrace) that tells the
// client, as progress notifications on the call's progress token (MCP
// 2025-06-18, "Progress"), what a send that waits does: its receipt and
// what it waits for as soon as the session has the message, then a target
// found waiting on its user. A call without a token gets none.
func withProgress[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if req == nil || req.Params == nil || req.Session == nil || req.Params.GetProgressToken() == nil {
			return h(ctx, req, in)
		}
		token := req.Params.GetProgressToken()
		var mu sync.Mutex
		var n float64
		var target string
		say := func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			n++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
		}
		trace := &app.SendTrace{
			Handed: func(sent wire.Sent, w app.Awaiting) {
				mu.Lock()
				target = w.Target
				mu.Unlock()
				say(app.ReceiptLine(sent.Receipt) + "; " + w.What(time.Now()) + "; cancelling the call stops the wait, not the message, which was handed over")
			},
			TargetWaiting: func(waitingFor string) {
				mu.Lock()
				name := target
				mu.Unlock()
				say(strings.TrimPrefix(app.TargetWaitingNote(name, waitingFor), "peerctl: note: "))
			},
		}
		return h(app.WithSendTrace(ctx, trace), req, in)
	}
}
