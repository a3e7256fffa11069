package serve

import (
	"bufio"
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/ports/wire"
)

// Each moment of a send that waits in the service becomes a Talk line,
// which the client replays on its own trace exactly (a hand-over's
// receipt with its durations and the outbox message); nothing is said
// after the final line.
func TestTalkCarriesTheWaitsMomentsToTheClient(t *testing.T) {
	var said []Answer
	ctx, ended := talking(context.Background(), func(a Answer) { said = append(said, a) })
	tr := app.SendTraceFrom(ctx)
	require.NotNil(t, tr)
	until := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	receipt := wire.Receipt{Outcome: "queued", Name: "büild\x1b", TransportMs: 712, ElapsedMs: 800}
	tr.Handed(wire.Sent{Receipt: receipt, Notes: []string{"peerctl: warning: x"}}, app.Awaiting{Reply: true, Target: "büild\x1b", Until: until})
	tr.Confirmation([]string{"peerctl: confirmed: y"})
	tr.TargetWaiting("dialog open")
	ended()
	tr.TargetWaiting("again")
	require.Len(t, said, 3, "nothing after the end")

	var got struct {
		sent    wire.Sent
		w       app.Awaiting
		lines   []string
		waiting string
	}
	client := &app.SendTrace{Handed: func(s wire.Sent, w app.Awaiting) { got.sent, got.w = s, w },
		Confirmation: func(l []string) { got.lines = l }, TargetWaiting: func(f string) { got.waiting = f }}
	for _, a := range said {
		var line Answer
		roundTrip(t, a, &line)
		line.Talk.Tell(client, &Ref{ID: 3, State: "delivering"})
	}
	want := receipt
	want.Outbox = &wire.OutboxRef{ID: 3, State: "delivering"}
	assert.Equal(t, wire.Sent{Receipt: want, Notes: []string{"peerctl: warning: x"}}, got.sent)
	assert.Equal(t, app.Awaiting{Reply: true, Target: "büild\x1b", Until: until}, got.w)
	assert.Equal(t, []string{"peerctl: confirmed: y"}, got.lines)
	assert.Equal(t, "dialog open", got.waiting)
}

// roundTrip writes v as a protocol line and reads it into out.
func roundTrip(t *testing.T, v any, out any) {
	var b bytes.Buffer
	require.NoError(t, WriteLine(&b, v))
	require.NoError(t, ReadLine(bufio.NewReader(&b), out))
}
