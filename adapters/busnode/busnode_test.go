package busnode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

type carrier struct {
	answer []byte
	err    error
	calls  int
}

func (c *carrier) Carry(context.Context, string, []byte) ([]byte, error) {
	c.calls++
	return c.answer, c.err
}

func node(t *testing.T, c Carrier) *Node {
	t.Helper()
	dest, err := domain.ParseDest("nats:beta")
	require.NoError(t, err)
	n, err := New(c, dest, time.Minute)
	require.NoError(t, err)
	return n
}

// What a carrier says of a request is the refusal a send gets: before it
// went out, host_unreachable; after, outcome_unknown; it is carried once.
func TestNodeSendRefusalsByWhatTheCarrierSays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []byte
		err    error
		want   domain.Reason
		says   string
	}{
		{"not sent", nil, fmt.Errorf("%w: the service is not on the bus", ErrNotSent), domain.ReasonHostUnreachable, "not on the bus"},
		{"no service", nil, ErrNoService, domain.ReasonHostUnreachable, "node beta has no service on the fleet's bus (nothing was sent)"},
		{"broken", nil, fmt.Errorf("%w: an answer of 2000000 bytes", ErrBroken), domain.ReasonHostUnreachable, "2000000 bytes"},
		{"went out", nil, errors.New("the service ended"), domain.ReasonOutcomeUnknown, "peerctl show --host nats:beta inbox"},
		{"an answer that is none", []byte(`{"v":1,"version":"x","code":0,"doc":{},"stderr":[],"extra":1}`), nil, domain.ReasonHostUnreachable, "extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &carrier{answer: tc.answer, err: tc.err}
			_, err := node(t, c).Send(t.Context(), wire.SendQuery{Address: "inbox", Text: "hi"})
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.want, r.Reason)
			assert.Contains(t, r.Detail+err.Error(), tc.says)
			assert.Equal(t, 1, c.calls, "never carried again")
		})
	}
}

// A list that went out and got no answer had no text: host_unreachable.
func TestNodeListUnansweredIsUnreachable(t *testing.T) {
	_, err := node(t, &carrier{err: errors.New("context deadline exceeded")}).List(t.Context(), wire.ListQuery{})
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
}
