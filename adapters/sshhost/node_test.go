package sshhost_test

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// answering is a Remote whose every call ends with res.
type answering struct{ res ports.RemoteResult }

func (a answering) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	return a.res, nil
}

func (a answering) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	panic("not called")
}

// TestNodeListKeepsTheFarVersion: a listing says which peerctl the far
// side runs, as its hello named it (the dashboard's Hosts show it).
func TestNodeListKeepsTheFarVersion(t *testing.T) {
	dest, err := domain.ParseDest("dev-box")
	require.NoError(t, err)
	n := sshhost.NewNode(answering{ports.RemoteResult{Stdout: []byte("[]\n"), Version: "v1.4.0"}}, dest, time.Minute)
	got, err := n.List(context.Background(), wire.ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, "v1.4.0", got.Version)
	assert.Empty(t, got.Sessions)
}

// A far peerctl that had the text and then failed without a receipt or a
// refusal (a panic is exit 2, a kill 137, exit 1) is outcome_unknown naming
// the host, its exit code and its last words, never a usage error; a dry
// run's failure stays the far side's own (issue 27, bad 3).
func TestNodeSendOfAFarSideThatFailedAfterTheText(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	for _, tc := range []struct {
		code   int
		stderr string
		words  string
	}{
		{2, "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x.go:3 +0x1d\nexit status 2\n", "exit status 2"},
		{1, "", "it said nothing"},
		{137, "killed \x1b[2J\n", "killed"},
	} {
		n := sshhost.NewNode(answering{ports.RemoteResult{Code: tc.code, Stderr: []byte(tc.stderr)}}, d, time.Minute)
		_, err := n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "hi"})
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "exit %d: %v", tc.code, err)
		assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, "exit %d", tc.code)
		assert.Contains(t, r.Detail, "peerctl on box ended with exit "+strconv.Itoa(tc.code))
		assert.Contains(t, r.Detail, tc.words)
		assert.NotContains(t, r.Detail, "\x1b")
	}
	n := sshhost.NewNode(answering{ports.RemoteResult{Code: 2, Stderr: []byte("peerctl: bad flag\n")}}, d, time.Minute)
	_, err = n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "hi", DryRun: true})
	_, isRefusal := domain.AsRefusal(err)
	assert.False(t, isRefusal, "a dry run sent nothing: its failure is the far side's own")
}

// The far side's command line: the text travels on stdin, announced by its
// length, after "--" and the address, so no TEXT is ever read as a flag.
func TestNodeSendArgs(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	rec := &recording{res: ports.RemoteResult{Stdout: []byte("{}")}}
	n := sshhost.NewNode(rec, d, time.Minute)
	_, _ = n.Send(context.Background(), wire.SendQuery{Address: "proj-89", Text: "--stdin-bytes=3", Timeout: 30 * time.Second,
		ConfirmTimeout: 5 * time.Second, Wait: time.Minute, From: "ci", NoConfirm: true})
	require.NotNil(t, rec.call.Stdin)
	b, _ := io.ReadAll(rec.call.Stdin)
	assert.Equal(t, "--stdin-bytes=3", string(b))
	a := rec.call.Args
	assert.Equal(t, []string{"--", "proj-89", "-"}, a[len(a)-3:])
	assert.Equal(t, "--stdin-bytes=15", a[1])
	for _, want := range []string{"--timeout=30s", "--confirm-timeout=5s", "--json", "--from=ci", "--no-confirm", "--wait=1m0s"} {
		assert.Contains(t, a, want)
	}
	assert.NotContains(t, a, "--dry-run")
}

// recording is a Remote that keeps the call it got and answers with res.
type recording struct {
	call ports.RemoteCall
	res  ports.RemoteResult
}

func (r *recording) Call(_ context.Context, c ports.RemoteCall) (ports.RemoteResult, error) {
	r.call = c
	return r.res, nil
}

func (r *recording) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	panic("not called")
}
