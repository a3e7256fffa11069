//go:build unix

package courierexec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/courierexec"
	_ "github.com/peerctl/peerctl/adapters/fsregistry" // Claude Code's spec: the targets are its sessions
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/transporttest"
	"github.com/peerctl/peerctl/test/socktest"
	"github.com/peerctl/peerctl/test/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	code = testbin.Cleanup(code)
	os.Exit(code)
}

const testGrace = 500 * time.Millisecond

// courier is one courier transport wired to the fake claude and a target
// whose inbox socket is a recording listener.
type courier struct {
	t      *courierexec.Transport
	rec    string // the fake's record folder
	target domain.Session
	inbox  *socktest.Listener
}

type fakeOpts struct {
	scenario string
	env      []string // added to a minimal environment
	timeout  time.Duration
	config   courierexec.Config // Program, Env, Timeout and Grace are filled in
}

func newCourier(t *testing.T, o fakeOpts) courier {
	t.Helper()
	rec := t.TempDir()
	cfg := o.config
	cfg.Program = testbin.Build(t, testbin.FakeClaude)
	cfg.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"FAKECLAUDE_RECORD=" + rec, "FAKECLAUDE_SCENARIO=" + o.scenario}, o.env...)
	cfg.Timeout = o.timeout
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	cfg.Grace = testGrace
	if cfg.NoticeWindow == 0 {
		cfg.NoticeWindow = 2 * time.Second
	}
	sockDir, err := os.MkdirTemp("", "cc")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "in.sock")
	inbox := socktest.Listen(t, sock, false)
	r := domain.Record{File: "4242.json", PID: 4242, Kind: domain.KindInteractive,
		SessionID: "11111111-2222-4333-8444-555555555555", Name: "proj-ab", SocketPath: sock}
	c := courier{t: courierexec.New(cfg), rec: rec, target: transporttest.Session(t, r), inbox: inbox}
	t.Cleanup(func() { c.requireGroupGone(t) })
	return c
}

func msg(t testing.TB, text string) domain.Message {
	t.Helper()
	m, err := domain.NewMessage(text)
	require.NoError(t, err)
	return m
}

// received returns the texts the inbox got, unwrapped from the frames the
// fake posts (as Claude Code does: a cross-session-message wrapper).
func (c courier) received(t testing.TB) []string {
	var out []string
	for _, f := range c.inbox.Frames() {
		var frame struct {
			Message struct{ Content string } `json:"message"`
		}
		require.NoError(t, json.Unmarshal(f, &frame), "frame %q", f)
		body := frame.Message.Content
		i := strings.Index(body, ">\n")
		require.GreaterOrEqual(t, i, 0, "no wrapper in %q", body)
		body = strings.TrimSuffix(body[i+2:], "\n</cross-session-message>")
		out = append(out, body)
	}
	return out
}

func (c courier) file(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join(c.rec, name))
	require.NoError(t, err)
	return string(b)
}

// started reports whether the fake ran, and its pid and process group.
func (c courier) started(t *testing.T) (ok bool, pid, pgid int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.rec, "pid"))
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, 0
	}
	require.NoError(t, err)
	_, err = fmt.Sscan(string(b), &pid, &pgid)
	require.NoError(t, err)
	return true, pid, pgid
}

func (c courier) children(t *testing.T) []int {
	b, err := os.ReadFile(filepath.Join(c.rec, "children"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, n)
	}
	return pids
}

// requireGroupGone fails unless every process of the fake's group (and each
// recorded child) is gone or a zombie within a bound. A zombie holds nothing
// and cannot run; its reaping is its parent's business.
func (c courier) requireGroupGone(t *testing.T) {
	t.Helper()
	ok, _, pgid := c.started(t)
	if !ok {
		return
	}
	// Never scan (or kill) our own group: a courier that shares it is a
	// failure in itself.
	require.NotEqual(t, syscall.Getpgrp(), pgid, "the courier runs in the test's own process group")
	pids := c.children(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := groupMembers(pgid)
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			require.Empty(t, left, "processes of the courier's group %d outlived the call", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live, non-zombie processes of group pgid.
func groupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive: the pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestCourierTransportContract(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, tc transporttest.Case) transporttest.Setup {
		scenario := map[transporttest.Far]string{
			transporttest.Accept: "sent",
			transporttest.Hang:   "fork_hang_ignore_term",
			transporttest.Fail:   "not_sent",
		}[tc.Far]
		c := newCourier(t, fakeOpts{scenario: scenario, timeout: tc.Timeout})
		return transporttest.Setup{Transport: c.t, Target: c.target, Grace: testGrace,
			Received: func() []string { return c.received(t) }}
	})
}

func TestCourierReceipt(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent", config: courierexec.Config{Name: "ci-bot"}})
	text := transporttest.TrickyTexts()["fake system"]
	rec, err := c.t.Deliver(context.Background(), c.target, msg(t, text))
	require.NoError(t, err)
	assert.Equal(t, "queued", rec.Outcome)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, rec.MsgID)
	assert.Contains(t, rec.ClaudeResult, "in that session's inbox")
	assert.Equal(t, []string{text}, c.received(t))
	var sent struct{ To, Message string }
	require.NoError(t, json.Unmarshal([]byte(c.file(t, "sent.jsonl")), &sent))
	assert.Equal(t, "uds:"+c.target.SocketPath(), sent.To, "the courier addresses the socket, not a name")
	assert.Contains(t, string(c.inbox.Frames()[0]), `from-name=\"ci-bot\"`)
}

func TestCourierArgvEnvAndFolder(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent", env: []string{"CLAUDECODE=1", "CLAUDE_CODE_MESSAGING_TOKEN=caller-secret",
		"CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_BASE_URL=https://example.invalid", "ANTHROPIC_AUTH_TOKEN=user-secret",
		"CLAUDE_CONFIG_DIR=/users/own/config", "HTTPS_PROXY=http://proxy.invalid:3128", "LANG=C.UTF-8"}})
	text := "never on argv: a distinctive 7f3e text"
	_, err := c.t.Deliver(context.Background(), c.target, msg(t, text))
	require.NoError(t, err)
	var argv []string
	require.NoError(t, json.Unmarshal([]byte(c.file(t, "argv.json")), &argv))
	assert.Equal(t, c.t.Args(), argv)
	assert.NotContains(t, strings.Join(argv, " "), "7f3e")
	env := c.file(t, "env")
	for _, gone := range []string{"CLAUDECODE=", "caller-secret", "CLAUDE_CODE_USE_BEDROCK", "example.invalid", "user-secret",
		"/users/own/config", "proxy.invalid"} {
		assert.NotContains(t, env, gone)
	}
	assert.Contains(t, env, "LANG=C.UTF-8\n")
	assert.Contains(t, env, "\nDISABLE_AUTOUPDATER=1\n")
	assert.Contains(t, env, "\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n")
	assert.Regexp(t, `(?m)^ANTHROPIC_BASE_URL=http://127\.0\.0\.1:[0-9]+$`, env)
	assert.Regexp(t, `(?m)^ANTHROPIC_API_KEY=peerctl-[0-9a-f]{64}$`, env)
	var cwd struct {
		Path string
		Mode string
		UID  int
	}
	require.NoError(t, json.Unmarshal([]byte(c.file(t, "cwd.json")), &cwd))
	assert.Equal(t, "700", cwd.Mode)
	assert.Equal(t, os.Getuid(), cwd.UID)
	assert.Regexp(t, `(?m)^CLAUDE_CONFIG_DIR=`+regexpQuote(filepath.Dir(cwd.Path))+`/config$`, env, "a config dir of its own, beside its folder")
	_, err = os.Stat(cwd.Path)
	assert.ErrorIs(t, err, os.ErrNotExist, "the private folder is removed after the run")
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestCourierVerdicts runs the fake claude through each way a run can end.
func TestCourierVerdicts(t *testing.T) {
	tests := []struct {
		scenario string
		timeout  time.Duration
		outcome  string // success: the receipt's outcome
		want     string // failure: a piece of the refusal's detail
		// unknown: the failure came after the courier was given the text
		// (outcome_unknown, not delivery_failed).
		unknown bool
	}{
		{scenario: "sent", outcome: "queued"},
		{scenario: "held", outcome: "held"},
		{scenario: "other_notice", outcome: "queued"},
		{scenario: "wrong_key", outcome: "queued"},
		{scenario: "sent_leave_child", outcome: "queued"},
		{scenario: "refused", want: "refused by the target"},
		{scenario: "not_sent", want: `answered success:false: "“peerctl” → uds:`},
		{scenario: "tool_error", want: `SendMessage failed: "<tool_use_error>Error: the fake refuses this call</tool_use_error>"`},
		{scenario: "no_send_tool", want: `the courier was not offered SendMessage (tools offered: "ListAgents")`},
		{scenario: "not_logged_in", want: "Not logged in"},
		{scenario: "unknown_option", want: "unknown option"},
		{scenario: "hang", timeout: 1500 * time.Millisecond, want: "nothing was sent"},
		{scenario: "sent_hang", timeout: 1500 * time.Millisecond, want: "the courier had been given the text", unknown: true},
		{scenario: "fork_hang_ignore_term", timeout: 1500 * time.Millisecond, want: "its process group was ended"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			c := newCourier(t, fakeOpts{scenario: tt.scenario, timeout: tt.timeout})
			rec, err := c.t.Deliver(context.Background(), c.target, msg(t, "hello"))
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.outcome, rec.Outcome)
				assert.NotEmpty(t, rec.MsgID)
				return
			}
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			want := domain.ReasonDeliveryFailed
			if tt.unknown {
				want = domain.ReasonOutcomeUnknown
			}
			assert.Equal(t, want, r.Reason, "%s", r.Detail)
			assert.Contains(t, r.Detail, tt.want)
			if tt.unknown {
				assert.Equal(t, []string{"hello"}, c.received(t), "the text did arrive: a failure would have been false")
			}
		})
	}
}

// TestCourierWarm sends several messages through one courier, and hears a
// notice on Inbound: the API issue 12 builds on.
func TestCourierWarm(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "held"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cr, err := c.t.Start(ctx)
	require.NoError(t, err)
	defer cr.Close()
	var ids []string
	for i := range 3 {
		res, err := cr.Send(ctx, c.target.SocketPath(), fmt.Sprintf("message %d", i))
		require.NoError(t, err)
		assert.True(t, res.Success)
		ids = append(ids, res.MsgID)
	}
	c.inbox.Wait(3)
	assert.Equal(t, []string{"message 0", "message 1", "message 2"}, c.received(t), "one SendMessage per send, never a repeat")
	seen := map[string]string{}
	for len(seen) < 3 {
		select {
		case in := <-cr.Inbound():
			require.Equal(t, courierexec.InboundNotice, in.Kind)
			seen[in.MsgID] = in.Verdict
		case <-ctx.Done():
			t.Fatalf("heard %d notices of 3", len(seen))
		}
	}
	for _, id := range ids {
		assert.Equal(t, "held", seen[id])
	}
	require.NoError(t, cr.Close())
	assert.Zero(t, cr.Stats().Unauthorized)
	_, err = cr.Send(ctx, c.target.SocketPath(), "after close")
	assert.Error(t, err)
}

func TestCourierPing(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cr, err := c.t.Start(ctx)
	require.NoError(t, err)
	tools, took, err := cr.Ping(ctx)
	require.NoError(t, err)
	assert.Contains(t, tools, "SendMessage")
	assert.Positive(t, took)
	require.NoError(t, cr.Close())
	assert.Empty(t, c.received(t), "a ping sends nothing")
}

func TestCourierWrongKeyIsCounted(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "wrong_key"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cr, err := c.t.Start(ctx)
	require.NoError(t, err)
	_, err = cr.Send(ctx, c.target.SocketPath(), "hello")
	require.NoError(t, err)
	require.NoError(t, cr.Close())
	assert.Equal(t, int64(1), cr.Stats().Unauthorized)
}

func TestCourierRefusesBeforeRunning(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	r := c.target.Record()
	r.SocketPath = "relative/in.sock"
	_, err := c.t.Deliver(context.Background(), transporttest.Session(t, r), msg(t, "hello"))
	rf, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonNotAddressable, rf.Reason)
	_, err = os.Stat(filepath.Join(c.rec, "pid"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the courier ran")

	missing := courierexec.New(courierexec.Config{Program: filepath.Join(t.TempDir(), "no-claude")})
	_, err = missing.Deliver(context.Background(), c.target, msg(t, "hello"))
	rf, ok = domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
	assert.Contains(t, rf.Detail, "cannot start the courier")
	assert.Contains(t, rf.Detail, "a one-shot send --transport socket needs no claude", "the way to send without claude")
}

func TestPlan(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	p, err := c.t.Plan(c.target, msg(t, "a \"quoted\" text"))
	require.NoError(t, err)
	assert.Equal(t, "courier", p.Transport)
	assert.Equal(t, append([]string{p.Program}, c.t.Args()...), p.Argv)
	assert.JSONEq(t, `{"to":"uds:`+c.target.SocketPath()+`","message":"a \"quoted\" text","summary":"peerctl"}`, p.Call)
	assert.Empty(t, c.received(t))
	assert.Empty(t, p.Warning)

	// A dry run needs no program: the plan names it as configured and warns.
	gone := filepath.Join(t.TempDir(), "no-claude")
	missing := courierexec.New(courierexec.Config{Program: gone})
	p, err = missing.Plan(c.target, msg(t, "hello"))
	require.NoError(t, err)
	assert.Equal(t, gone, p.Argv[0])
	assert.Contains(t, p.Warning, "was not found")
	assert.Contains(t, p.Warning, "delivery_failed")
}

// A long-lived courier (Peer, as relays use it) is one sender: Claude Code
// drops a message identical to the previous one from the same sender
// within 30 s, so the Peer refuses it without sending rather than report
// it queued. A different text in between, or another target, is sent.
func TestPeerRefusesARepeatTheReceiverWouldDrop(t *testing.T) {
	c := newCourier(t, fakeOpts{scenario: "sent"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.t.StartCourier(ctx)
	require.NoError(t, err)
	defer p.Close()

	_, err = p.Send(ctx, c.target, msg(t, "same"))
	require.NoError(t, err)
	_, err = p.Send(ctx, c.target, msg(t, "same"))
	rf, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonDeliveryFailed, rf.Reason)
	assert.Contains(t, rf.Detail, "identical to the previous one from the same sender")
	assert.Contains(t, rf.Detail, "nothing was sent")
	_, err = p.Send(ctx, c.target, msg(t, "other"))
	require.NoError(t, err)
	_, err = p.Send(ctx, c.target, msg(t, "same"))
	require.NoError(t, err, "the previous text differs: Claude Code delivers it")
	c.inbox.Wait(3)
	assert.Equal(t, []string{"same", "other", "same"}, c.received(t))
}
