package domain

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNewInboundCutsAtTheBound(t *testing.T) {
	at := time.Now()
	small := NewInbound("uds:/s.sock", "n", "hi", at)
	assert.Equal(t, "hi", small.Text)
	assert.False(t, small.Truncated)

	exact := NewInbound("uds:/s.sock", "n", strings.Repeat("a", MaxInboundBytes), at)
	assert.Len(t, exact.Text, MaxInboundBytes)
	assert.False(t, exact.Truncated)

	// A 3-byte character straddles the bound: the cut keeps whole characters.
	big := NewInbound("uds:/s.sock", "n", strings.Repeat("a", MaxInboundBytes-1)+"€"+"tail", at)
	assert.True(t, big.Truncated)
	assert.Len(t, big.Text, MaxInboundBytes-1)
	assert.True(t, strings.HasSuffix(big.Text, "a"))
}

func TestInboundIsFrom(t *testing.T) {
	in := NewInbound("uds:/tmp/cc-socks/4652.sock", "proj", "x", time.Now())
	assert.True(t, in.IsFrom("/tmp/cc-socks/4652.sock"))
	assert.False(t, in.IsFrom("/tmp/cc-socks/4652.sock2"))
	assert.False(t, in.IsFrom(""))
	assert.False(t, NewInbound("bridge:/tmp/cc-socks/4652.sock", "p", "x", time.Now()).IsFrom("/tmp/cc-socks/4652.sock"))
}

func TestNoticeApply(t *testing.T) {
	rec := Receipt{Transport: "courier", Outcome: "queued", MsgID: "m-1"}
	out, ok, err := Notice{MsgID: "m-2", Verdict: "held"}.Apply(rec)
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, rec, out)

	out, ok, err = Notice{MsgID: "m-1", Verdict: "held", Text: "held by that session"}.Apply(rec)
	assert.True(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, "held", out.Outcome)
	assert.Equal(t, "held by that session", out.ClaudeResult)

	_, ok, err = Notice{MsgID: "m-1", Verdict: "refused", Text: "was refused"}.Apply(rec)
	assert.True(t, ok)
	r, isRefusal := AsRefusal(err)
	assert.True(t, isRefusal)
	assert.Equal(t, ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, `"was refused"`)
}
