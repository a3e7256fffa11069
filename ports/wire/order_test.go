package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// outbox show --json: a folded history line has its count and last time;
// a line of one has neither (fields only added); tries is every try.
func TestOutboxMessageOfHistoryCount(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	got := OutboxMessageOf(ports.OutboxMessage{ID: 1, State: domain.OutboxStored, Tries: 6}, []ports.OutboxEvent{
		{At: t0, Last: t0, Count: 1, State: domain.OutboxStored},
		{At: t0, Last: t0.Add(62 * time.Second), Count: 6, State: domain.OutboxStored, Reason: "not_live: away"},
	})
	assert.Equal(t, 6, got.Tries)
	require.Len(t, got.History, 2)
	assert.Zero(t, got.History[0].Count)
	assert.Empty(t, got.History[0].LastAt)
	assert.Equal(t, 6, got.History[1].Count)
	assert.Equal(t, "2026-12-06T10:01:02.000Z", got.History[1].LastAt)
}

// An order carries its sender across the socket and into the outbox,
// its names exact; an order that says none (an older client's) reads as
// entrance unknown.
func TestSendOrderCarriesItsSender(t *testing.T) {
	o := SendOrder{Query: SendQuery{Address: "a", Text: "t"}, Sender: domain.NewSender(domain.EntranceMCP, "").WithSession("rev\xff", "id-1")}
	b, err := o.MarshalJSON()
	require.NoError(t, err)
	var got SendOrder
	require.NoError(t, got.UnmarshalJSON(b))
	assert.Equal(t, o.Sender, got.Sender)
	b, err = SendOrder{Query: SendQuery{Address: "a"}}.MarshalJSON()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "sender")
	require.NoError(t, got.UnmarshalJSON(b))
	assert.Equal(t, domain.EntranceUnknown, got.Sender.Entrance())
	assert.Error(t, got.UnmarshalJSON([]byte(`{"v":3,"sender":{"entrance":"ssh"}}`)))
}

// An order carries the decision its entrance made (a hold), its rule's
// words exact, in the version a service that would read it without the
// decision refuses; an order without one keeps the version before.
func TestSendOrderCarriesItsEntrancesDecision(t *testing.T) {
	r, err := domain.NewRule("hold", "mcp", "rev*ü", "claude-code", "", "/srv/my prod")
	require.NoError(t, err)
	from := domain.NewSender(domain.EntranceMCP, "")
	d := domain.Decision{Action: domain.ActionHold, Rule: r, Number: 2, Unsure: true, From: from, To: domain.AddressTarget("reviewer", "")}
	o := SendOrder{Query: SendQuery{Address: "reviewer", Text: "t"}, Sender: from, Decided: &d}
	b, err := o.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"v":4`)
	var got SendOrder
	require.NoError(t, got.UnmarshalJSON(b))
	require.NotNil(t, got.Decided)
	assert.Equal(t, d, *got.Decided)
	assert.Equal(t, d.Why(), got.Decided.Why())

	b, err = SendOrder{Query: SendQuery{Address: "a"}}.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"v":3`)
	assert.NotContains(t, string(b), "decided")
	require.NoError(t, got.UnmarshalJSON(b))
	assert.Nil(t, got.Decided)
	assert.Error(t, got.UnmarshalJSON([]byte(`{"v":3,"decided":{"action":"hold","from":"mcp","to":"*"}}`)), "a decision in the version that cannot say it")
	assert.Error(t, got.UnmarshalJSON([]byte(`{"v":4,"decided":{"action":"wait","from":"mcp","to":"*"}}`)))
}

// The decision's words are the rule's, readable in the order (SERVE.md).
func TestSendOrderDecisionReads(t *testing.T) {
	r, err := domain.NewRule("hold", "mcp", "reviewer", "", "", "")
	require.NoError(t, err)
	b, err := SendOrder{Query: SendQuery{Address: "reviewer"}, Decided: &domain.Decision{Action: domain.ActionHold, Rule: r, Number: 2}}.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"decided":{"action":"hold","from":"mcp","to":"reviewer","number":2}`)
}
