//go:build unix

package acceptance

// Requests over the fleet's bus on the built binary, hermetic (an
// embedded NATS server, test/natstest): a machine's service (node beta,
// a fake Claude Code session "inbox", the fake claude as its courier)
// answers another machine's `list`, `show`, `send` and `doctor --host
// nats:beta`; its trust policy holds a message from node:alpha, kept in
// beta's outbox until approved there, until a rule allows them; a node
// with no service is host_unreachable.

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/natstest"
	"github.com/peerctl/peerctl/test/testproc"
)

func TestFleetRequestsReachANodesService(t *testing.T) {
	peerctlWithMCP(t) // serve with a bus and --host nats:NODE run in peerctl-mcp
	url := natstest.Start(t)
	beta := newServeWorld(t)
	betaConfig := t.TempDir()
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + betaConfig}
	beta.startServe(t)
	alpha := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "PEERCTL_SERVE=off",
		"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(t)}
	run := func(args ...string) result {
		return runPeerctl(t, runOpts{Env: alpha, Timeout: 2 * time.Minute}, args...)
	}

	var listed []wire.Session
	eventually(t, time.Minute, "beta's service to answer list --host nats:beta", func() bool {
		r := run("list", "--host", "nats:beta", "--harness", "claude-code", "--json")
		return r.Code == 0 && json.Unmarshal(r.Stdout, &listed) == nil && len(listed) > 0
	})
	require.Len(t, listed, 1)
	inbox := listed[0]
	assert.Equal(t, "inbox", inbox.Name)
	assert.Equal(t, "nats:beta", inbox.Host)
	assert.True(t, strings.HasPrefix(inbox.Endpoint, "nats:v1:beta:cc-peer:v1:"), inbox.Endpoint)

	r := run("show", "--host", "nats:beta", "--json", "inbox")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	var shown wire.Show
	require.NoError(t, json.Unmarshal(r.Stdout, &shown))
	assert.Equal(t, inbox.Endpoint, shown.Endpoint)
	assert.Equal(t, inbox.SessionID, shown.SessionID)

	// beta has no rule for other nodes: its default holds their messages,
	// kept in beta's outbox awaiting approval (nothing sent); approved
	// there, delivered once; denied, ended.
	held := func(text string) heldReceipt {
		t.Helper()
		r := run("send", "--host", "nats:beta", "--json", "inbox", text)
		require.Equal(t, 0, r.Code, "a held send is kept: exit 0; stderr: %s", r.Stderr)
		var got heldReceipt
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
		assert.True(t, got.OK)
		assert.Equal(t, "awaiting_approval", got.Outcome)
		assert.Equal(t, "awaiting_approval", got.Outbox.State)
		assert.Equal(t, "default rule 1: hold from=node:* to=*", got.Outbox.Rule)
		assert.Equal(t, "node:alpha", got.Sender.As)
		assert.Contains(t, string(r.Stdout), `"host": "nats:beta"`)
		require.NotZero(t, got.Outbox.ID)
		return got
	}
	got := held("hello from alpha, held")
	assert.False(t, beta.courierStarted(t), "nothing ran on beta")
	assert.Empty(t, beta.listener.Frames(), "nothing reached the session")
	m := beta.show(t, got.Outbox.ID)
	assert.Equal(t, "awaiting_approval", m.State)
	id := strconv.FormatInt(got.Outbox.ID, 10)
	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "outbox", "show", id)
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	assert.Contains(t, string(rb.Stdout), "sender:       node:alpha")
	r = run("send", "--host", "nats:beta", "inbox", "hello from alpha, held too")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stdout), "awaiting_approval: message ")
	assert.Contains(t, string(r.Stdout), `for "inbox" on nats:beta is held by that machine's trust policy (default rule 1: hold from=node:* to=*)`)
	assert.Contains(t, string(r.Stdout), "approve it there: peerctl outbox approve ")

	rb = runPeerctl(t, runOpts{Env: beta.env(t)}, "outbox", "approve", id)
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	eventually(t, time.Minute, "the approved message to be delivered on beta", func() bool { return beta.show(t, got.Outbox.ID).State == "delivered" })
	require.Len(t, beta.listener.Wait(1), 1)
	rb = runPeerctl(t, runOpts{Env: beta.env(t)}, "outbox", "approve", id)
	assert.Equal(t, 16, rb.Code, "approved once: wrong_state; %s", rb.Stderr)

	denied := held("hello from alpha, denied")
	rb = runPeerctl(t, runOpts{Env: beta.env(t)}, "outbox", "deny", strconv.FormatInt(denied.Outbox.ID, 10))
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)
	assert.Equal(t, "denied", beta.show(t, denied.Outbox.ID).State)
	assert.Len(t, beta.listener.Frames(), 1, "delivered exactly once, the denied one never")

	rb = runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)

	// The endpoint list gave is taken back by send; the receipt is beta's.
	r = run("send", "--json", inbox.Endpoint, "hello from alpha")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	var receipt wire.Receipt
	require.NoError(t, json.Unmarshal(r.Stdout, &receipt), "%s", r.Stdout)
	assert.True(t, receipt.OK)
	assert.Equal(t, "nats:beta", receipt.Host)
	assert.Equal(t, inbox.Endpoint, receipt.Endpoint)
	assert.Equal(t, inbox.SessionID, receipt.SessionID)
	assert.True(t, beta.courierStarted(t), "beta's courier delivered it")

	r = run("doctor", "--host", "nats:beta", "--json")
	assert.Contains(t, []int{0, 1}, r.Code, "%s", r.Stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(r.Stdout, &doc), "%s", r.Stdout)
	assert.Contains(t, doc, "registry")

	r = run("send", "--host", "nats:gone", "inbox", "hello")
	assert.Equal(t, wire.ExitHostUnreachable, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stderr), "node gone has no service on the fleet's bus")

	// watch --host nats:beta follows beta's presence: its session first;
	// beta's service stopping ends it, a lost event and exit 10.
	watch := exec.Command(peerctlBin(t), "watch", "--host", "nats:beta", "--json")
	watch.Env = alpha
	out, errs := &testproc.Buffer{}, &testproc.Buffer{}
	watch.Stdout, watch.Stderr = out, errs
	watch.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, watch.Start())
	t.Cleanup(func() { _ = syscall.Kill(-watch.Process.Pid, syscall.SIGKILL) })
	eventually(t, time.Minute, "watch --host nats:beta to print beta's session", func() bool {
		return strings.Contains(out.String(), `"event":"appeared"`) && strings.Contains(out.String(), `"name":"inbox"`)
	})
	assert.Contains(t, out.String(), `"host":"nats:beta"`)
	beta.stopServe(t)
	err := watch.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stdout: %s\nstderr: %s", out, errs)
	assert.Equal(t, wire.ExitHostUnreachable, exit.ExitCode(), "%s", errs)
	assert.Contains(t, out.String(), `"event":"lost"`)
	assert.Contains(t, errs.String(), "node beta left the fleet's bus")
}

// A node's service answers another node's sends as it runs its own: on
// its warm courier, started by the first and taken by the next (before,
// each request built the command line's graph and started a courier of
// its own, a Claude Code process per message); the receipt is still the
// courier's, for the session named, and the trust policy still decides
// as node:alpha (a hold kept in beta's outbox, nothing sent).
func TestFleetSendAnsweredOnTheNodesWarmCourier(t *testing.T) {
	peerctlWithMCP(t) // serve with a bus and --host nats:NODE run in peerctl-mcp
	url := natstest.Start(t)
	beta := newServeWorld(t)
	beta.more = []string{"PEERCTL_NATS=" + url, "PEERCTL_NODE=beta", "CLAUDE_CONFIG_DIR=" + beta.config, "XDG_CONFIG_HOME=" + t.TempDir()}
	beta.startServe(t)
	alpha := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PEERCTL_NATS=" + url, "PEERCTL_NODE=alpha", "PEERCTL_SERVE=off",
		"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=" + catSocketDir(t)}
	send := func(text string) (wire.Receipt, string) {
		t.Helper()
		r := runPeerctl(t, runOpts{Env: alpha, Timeout: 2 * time.Minute}, "send", "--json", "--no-confirm", "--host", "nats:beta", "inbox", text)
		require.Equal(t, 0, r.Code, "%s", r.Stderr)
		var got wire.Receipt
		require.NoError(t, json.Unmarshal(r.Stdout, &got), "%s", r.Stdout)
		return got, beta.fakeFile(t, "pid")
	}
	eventually(t, time.Minute, "beta's service to answer list --host nats:beta", func() bool {
		return runPeerctl(t, runOpts{Env: alpha, Timeout: 2 * time.Minute}, "list", "--host", "nats:beta", "--json").Code == 0
	})

	// No rule yet: the default holds node:alpha's message.
	r := runPeerctl(t, runOpts{Env: alpha, Timeout: 2 * time.Minute}, "send", "--json", "--no-confirm", "--host", "nats:beta", "inbox", "held")
	require.Equal(t, 0, r.Code, "%s", r.Stderr)
	assert.Contains(t, string(r.Stdout), `"outcome": "awaiting_approval"`)
	assert.Contains(t, string(r.Stdout), `"as": "node:alpha"`)
	assert.False(t, beta.courierStarted(t), "nothing ran on beta")
	rb := runPeerctl(t, runOpts{Env: beta.env(t)}, "policy", "add", "--from", "node:alpha", "--to", "*", "allow")
	require.Equal(t, 0, rb.Code, "%s", rb.Stderr)

	first, courier := send("the API changed, rebase on main")
	second, again := send("and the schema too")
	for _, got := range []wire.Receipt{first, second} {
		assert.True(t, got.OK)
		assert.Equal(t, "nats:beta", got.Host)
		assert.Equal(t, beta.id, got.SessionID)
		assert.Equal(t, "courier", got.Transport)
		assert.NotEmpty(t, got.MsgID)
	}
	assert.Equal(t, courier, again, "the second send took the courier the first started")
	st, out := beta.status(t)
	assert.Equal(t, 1, st.Warm.Started, "one courier for both: %s", out.Stdout)
	require.Len(t, beta.listener.Wait(2), 2, "each delivered once, the held one never")
}
