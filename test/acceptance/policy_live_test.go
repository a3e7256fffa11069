//go:build unix

package acceptance

// Live (PEERCTL_LIVE=1), offline: the trust policy against real Claude
// Code. Real Claude Code is the MCP client of the real `peerctl mcp` over
// stdio (mcpClientSends), toward a real session: a deny rule refuses its
// send_message and nothing reaches the target's transcript; a hold rule
// keeps it in peerctl serve's outbox, awaiting approval, and `peerctl
// outbox approve` delivers it exactly once; the user's own `peerctl send`
// is not touched by either rule.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/test/livecc"
)

func TestLivePolicyHoldsAndRefusesMCP(t *testing.T) {
	bin := livecc.Require(t, livecc.Version())
	target := livecc.Start(t, bin, livecc.Options{NoAPIKey: true, WaitSettled: true})
	l := newLiveServe(t, target.ConfigDir, bin)
	xdg := t.TempDir()
	l.env = append(l.env, "XDG_CONFIG_HOME="+xdg)
	l.start(t)
	// peerctl mcp, started by the MCP client, finds the same policy and
	// the same service.
	env := map[string]string{"XDG_CONFIG_HOME": xdg, "XDG_STATE_HOME": l.state, "XDG_RUNTIME_DIR": l.run}
	policy := func(args ...string) {
		t.Helper()
		r := l.peerctl(t, append([]string{"--config-dir", target.ConfigDir, "policy"}, args...)...)
		require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)

	policy("add", "--from", "mcp", "--to", "*", "deny")
	denied := "peerctl policy live: denied " + stamp
	res := mcpClientSends(t, bin, target, denied, env)
	assert.True(t, res.IsError, "tool result: %s", res.ResultText())
	assert.Contains(t, res.ResultText(), "not_allowed")
	assert.Contains(t, res.ResultText(), "deny by rule 1 (deny from=mcp to=*)")
	assert.Zero(t, enqueuedCount(t, target.TranscriptPath(), denied), "nothing reached the target")

	policy("rm", "1")
	policy("add", "--from", "mcp", "--to", "*", "hold")
	held := "peerctl policy live: held " + stamp
	res = mcpClientSends(t, bin, target, held, env)
	require.False(t, res.IsError, "tool result: %s", res.ResultText())
	var receipt struct {
		Outcome string `json:"outcome"`
		Outbox  struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
		} `json:"outbox"`
		Sender struct {
			Entrance string `json:"entrance"`
		} `json:"sender"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.ResultText()), &receipt), "tool result: %s", res.ResultText())
	assert.Equal(t, "awaiting_approval", receipt.Outcome)
	assert.Equal(t, "mcp", receipt.Sender.Entrance)
	require.NotZero(t, receipt.Outbox.ID)
	assert.Equal(t, domain.OutboxAwaitingApproval, l.message(t, receipt.Outbox.ID).State)
	assert.Zero(t, enqueuedCount(t, target.TranscriptPath(), held), "held: nothing reached the target")

	// The user's own send is the cli entrance: neither rule applies.
	own := "peerctl policy live: the user's own " + stamp
	r := l.peerctl(t, "--config-dir", target.ConfigDir, "send", "--json", "--timeout", "3m", "--from", "live-policy", target.SessionID, own)
	require.Equal(t, 0, r.Code, "stderr: %s", r.Stderr)
	assert.True(t, enqueued(t, target.TranscriptPath(), "live-policy", own))

	r = l.peerctl(t, "--config-dir", target.ConfigDir, "outbox", "approve", fmt.Sprint(receipt.Outbox.ID))
	require.Equal(t, 0, r.Code, "stderr: %s\nlog: %s", r.Stderr, l.log)
	eventually(t, 180*time.Second, "the approved message to be delivered", func() bool {
		return l.message(t, receipt.Outbox.ID).State == domain.OutboxDelivered
	})
	m := l.message(t, receipt.Outbox.ID)
	assert.Equal(t, "mcp", m.Sender.Entrance().String())
	assert.Contains(t, m.ApprovedBy, "cli")
	assert.Equal(t, 1, enqueuedCount(t, target.TranscriptPath(), held), "delivered exactly once; log: %s", l.log)
}
