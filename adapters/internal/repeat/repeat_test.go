package repeat

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
)

func TestGuard(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	g := Guard{Sender: "courier", now: func() time.Time { return at }}
	target := transporttest.Session(t, domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: "/tmp/s/1.sock"})
	begin := func(text string) error {
		done, err := g.Begin(target, text)
		if err == nil {
			done(true)
		}
		return err
	}

	require.NoError(t, begin("a"))
	at = at.Add(Window - time.Millisecond)
	err := begin("a")
	rf, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
	assert.Contains(t, rf.Detail, "this courier's previous message")
	at = at.Add(time.Millisecond)
	require.NoError(t, begin("a"), "the window is over")

	// A send that did not reach the session restores the text before it.
	done, err := g.Begin(target, "b")
	require.NoError(t, err)
	_, err = g.Begin(target, "b")
	require.Error(t, err, "an identical send under way counts")
	done(false)
	require.Error(t, begin("a"), "a is the previous text again")
	require.NoError(t, begin("b"))

	// Entries older than the window are forgotten.
	at = at.Add(Window)
	other := transporttest.Session(t, domain.Record{File: "4243.json", PID: 4243, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555556", Name: "proj-cd", SocketPath: "/tmp/s/2.sock"})
	d, err := g.Begin(other, "c")
	require.NoError(t, err)
	d(true)
	assert.Len(t, g.last, 1)
}
