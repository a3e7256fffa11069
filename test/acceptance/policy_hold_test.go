//go:build unix

package acceptance

// The trust policy's hold on the built binary: a held send waits in
// peerctl serve's outbox (started on demand), awaiting approval; outbox
// approve delivers it once, outbox deny ends it; the service decides the
// policy again at every attempt.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldReceipt is the part of a held send's receipt these tests read.
type heldReceipt struct {
	OK      bool   `json:"ok"`
	Outcome string `json:"outcome"`
	Outbox  struct {
		ID    int64  `json:"id"`
		State string `json:"state"`
		Rule  string `json:"rule"`
	} `json:"outbox"`
	Sender struct {
		Entrance string `json:"entrance"`
		As       string `json:"as"`
	} `json:"sender"`
}

// newPolicyServeWorld is a serveWorld with a policy file of its own,
// holding rules (policy add's words).
func newPolicyServeWorld(t *testing.T, rules ...[]string) serveWorld {
	w := newServeWorld(t)
	w.more = append(w.more, "XDG_CONFIG_HOME="+t.TempDir())
	for _, r := range rules {
		res := w.peerctl(t, nil, append([]string{"policy", "add"}, r...)...)
		require.Equal(t, 0, res.Code, "stderr: %s", res.Stderr)
	}
	return w
}

func (w serveWorld) sendHeld(t *testing.T, text string) heldReceipt {
	t.Helper()
	r := w.peerctl(t, nil, "send", "--json", "--confirm-timeout", "300ms", w.id, text)
	require.Equal(t, 0, r.Code, "a held send is kept: exit 0; stderr: %s", r.Stderr)
	var got heldReceipt
	require.NoError(t, json.Unmarshal(r.Stdout, &got), "stdout: %s", r.Stdout)
	return got
}

func TestPolicyHoldThenApproveDeliversOnce(t *testing.T) {
	w := newPolicyServeWorld(t, []string{"--from", "cli", "--to", "*", "hold"})
	got := w.sendHeld(t, "held until approved")
	assert.True(t, got.OK)
	assert.Equal(t, "awaiting_approval", got.Outcome)
	assert.Equal(t, "awaiting_approval", got.Outbox.State)
	assert.Equal(t, "rule 1: hold from=cli to=*", got.Outbox.Rule)
	assert.Equal(t, "cli", got.Sender.Entrance)
	require.NotZero(t, got.Outbox.ID)
	sid := strconv.FormatInt(got.Outbox.ID, 10)

	r := w.peerctl(t, nil, "outbox", "show", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "state:        awaiting_approval")
	assert.Contains(t, string(r.Stdout), "sender:       cli")
	assert.Contains(t, string(r.Stdout), "rule:         rule 1: hold from=cli to=*")
	assert.Empty(t, w.listener.Frames(), "nothing reached the target")
	assert.Equal(t, "awaiting_approval", w.show(t, got.Outbox.ID).State, "not attempted while it waits")

	r = w.peerctl(t, nil, "outbox", "approve", "99")
	assert.Equal(t, 15, r.Code, "stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "not_found")

	r = w.peerctl(t, nil, "outbox", "approve", "--json", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	eventually(t, 60*time.Second, "the approved message to be delivered", func() bool { return w.show(t, got.Outbox.ID).State == "delivered" })
	require.Len(t, w.listener.Wait(1), 1)
	m := w.show(t, got.Outbox.ID)
	var states []string
	approved := ""
	for _, e := range m.History {
		states = append(states, e.State)
		if strings.HasPrefix(e.Reason, "approved by ") {
			approved = e.Reason
		}
	}
	assert.Equal(t, []string{"awaiting_approval", "stored", "delivering", "delivered"}, states)
	assert.Contains(t, approved, "approved by cli")

	r = w.peerctl(t, nil, "outbox", "approve", sid)
	assert.Equal(t, 16, r.Code, "approved once: wrong_state; stderr: %s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "wrong_state: message "+sid+" is delivered")
	r = w.peerctl(t, nil, "outbox", "deny", sid)
	assert.Equal(t, 16, r.Code)
	assert.Len(t, w.listener.Frames(), 1, "delivered exactly once")
}

func TestPolicyHoldThenDenyNeverSends(t *testing.T) {
	w := newPolicyServeWorld(t, []string{"--from", "cli", "--to", "*", "hold"})
	got := w.sendHeld(t, "never sent")
	sid := strconv.FormatInt(got.Outbox.ID, 10)
	r := w.peerctl(t, nil, "outbox", "deny", sid)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	m := w.show(t, got.Outbox.ID)
	assert.Equal(t, "denied", m.State)
	assert.Contains(t, m.Reason, "denied by cli")
	r = w.peerctl(t, nil, "outbox", "approve", sid)
	assert.Equal(t, 16, r.Code, "stderr: %s", r.Stderr)
	r = w.peerctl(t, nil, "outbox", "deny", "99")
	assert.Equal(t, 15, r.Code, "stderr: %s", r.Stderr)
	assert.Empty(t, w.listener.Frames(), "nothing reached the target")
}

// A stored message whose rule is now deny ends refused with not_allowed
// at its next attempt (outbox retry): the service decides again.
func TestPolicyRetryUnderADenyRuleIsRefused(t *testing.T) {
	w := newPolicyServeWorld(t)
	r := w.peerctl(t, nil, "send", "--json", "--durable", "nobody", "later")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	id := decodeReceipt(t, r).Outbox.ID
	require.Equal(t, "stored", w.show(t, id).State)
	r = w.peerctl(t, nil, "policy", "add", "--from", "cli", "--to", "nobody", "deny")
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	r = w.peerctl(t, nil, "outbox", "retry", strconv.FormatInt(id, 10))
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	eventually(t, 60*time.Second, "the retried message to be refused", func() bool { return w.show(t, id).State == "refused" })
	assert.Contains(t, w.show(t, id).Reason, "not_allowed: deny by rule 1")
}
