package serve

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// mailOrder is node alpha's durable send of text under key.
func mailOrder(key, text string) wire.SendOrder {
	return wire.SendOrder{Query: wire.SendQuery{Address: "reviewer", Text: text, Timeout: time.Second}, Durable: time.Hour, Key: key}
}

// The same key again with another text is dropped: no refusal, so no
// receipt that would read as the first message's fate at its sender.
func TestMailAgainWithAnotherTextSendsNoRefusal(t *testing.T) {
	s, st, set := answering(t)
	s.o.Settings = set
	ctx := t.Context()
	require.NoError(t, s.Take(ctx, "alpha", mailOrder("k1", "first"), 0))
	require.NoError(t, s.Take(ctx, "alpha", mailOrder("k1", "evil"), 0))
	kept, err := st.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	require.Len(t, kept, 1)
	assert.Equal(t, "first", kept[0].Text)
	receipts, _, err := s.MailChanges(ctx, 0)
	require.NoError(t, err)
	for _, r := range receipts {
		assert.NotEqual(t, domain.OutboxRefused.String(), r.State, "%+v", r)
	}
}

// Mail keeps its sender's deadline: the time it waited on the bus never
// gives it longer, whatever time to live it says; a time to live past
// app.MaxTTL is cut to it; a deadline already past expires it.
func TestMailExpiresByItsSendersDeadline(t *testing.T) {
	s, st, set := answering(t)
	s.o.Settings = set
	ctx := t.Context()
	deadline := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Millisecond)
	o := mailOrder("d1", "by ten minutes")
	o.Expires = deadline
	require.NoError(t, s.Take(ctx, "alpha", o, 0))
	long := mailOrder("d2", "a century")
	long.Durable = 100 * 365 * 24 * time.Hour
	before := time.Now()
	require.NoError(t, s.Take(ctx, "alpha", long, 0))
	late := mailOrder("d3", "too late")
	late.Expires = time.Now().Add(-time.Minute)
	require.NoError(t, s.Take(ctx, "alpha", late, 0))

	byKey := map[string]ports.OutboxMessage{}
	kept, err := st.List(ctx, ports.OutboxFilter{})
	require.NoError(t, err)
	for _, m := range kept {
		byKey[m.Key] = m
	}
	assert.True(t, deadline.Equal(byKey[mailKey("alpha", "d1")].Expires), "%v, not %v", byKey[mailKey("alpha", "d1")].Expires, deadline)
	assert.False(t, byKey[mailKey("alpha", "d2")].Expires.After(time.Now().Add(app.MaxTTL)))
	assert.False(t, byKey[mailKey("alpha", "d2")].Expires.Before(before.Add(app.MaxTTL)))
	assert.True(t, byKey[mailKey("alpha", "d3")].Expires.Before(time.Now()))
}

// The deadline crosses the bus exactly, RFC 3339 in UTC.
func TestSendOrderCarriesItsDeadline(t *testing.T) {
	o := mailOrder("k", "hi")
	o.Expires = time.Date(2026, 12, 7, 1, 2, 3, 4000, time.FixedZone("CET", 3600))
	data, err := o.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(data), `"expiresAt":"2026-12-07T00:02:03.000004Z"`)
	var back wire.SendOrder
	require.NoError(t, back.UnmarshalJSON(data))
	assert.True(t, o.Expires.Equal(back.Expires))
}
