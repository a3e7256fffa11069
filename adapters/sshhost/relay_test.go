package sshhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/sshhost"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/lines"
	"github.com/peerctl/peerctl/ports/wire"
)

// farRelay is a Remote whose stream is a far relay: it reads its stdin to
// the end, then prints what answer makes of the lines it got and exits
// with code.
type farRelay struct {
	answer func(in []string) []string
	code   int
	call   ports.RemoteCall
	got    []string
}

func (f *farRelay) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	panic("not called")
}

func (f *farRelay) Stream(_ context.Context, c ports.RemoteCall) (ports.RemoteStream, error) {
	f.call = c
	s := &fakeStream{lines: make(chan []byte), closed: make(chan struct{}), res: ports.RemoteResult{Code: f.code, Stderr: []byte("peerctl: bye\n")}}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(c.Stdin)
		sc.Buffer(nil, 2*lines.MaxRequest)
		for sc.Scan() {
			f.got = append(f.got, sc.Text())
		}
		for _, l := range f.answer(f.got) {
			select {
			case s.lines <- []byte(l):
			case <-s.closed:
				return
			}
		}
	}()
	return s, nil
}

type fakeStream struct {
	lines  chan []byte
	closed chan struct{}
	once   sync.Once
	res    ports.RemoteResult
}

func (s *fakeStream) Lines() <-chan []byte { return s.lines }

func (s *fakeStream) Wait() (ports.RemoteResult, error) { return s.res, nil }

func (s *fakeStream) Close() { s.once.Do(func() { close(s.closed) }) }

// relayLines runs n's relay on requests and returns every line it emitted.
func relayLines(t *testing.T, n *sshhost.Node, requests string) ([]wire.RelayLine, error) {
	t.Helper()
	var got []wire.RelayLine
	err := n.Relay(t.Context(), wire.RelayQuery{Name: "ci", Timeout: 30 * time.Second}, strings.NewReader(requests), func(l wire.RelayLine) error {
		got = append(got, l)
		return nil
	})
	return got, err
}

const (
	farReady   = `{"type":"ready","protocol":1,"name":"ci"}`
	farReceipt = `{"type":"receipt","id":1,"line":1,"outcome":"queued","msgId":"m1","transport":"courier","sessionId":"s","pid":7,"name":"one","elapsedMs":3}`
)

// Every line of the far relay comes back with its host; the far side is
// started as `relay` with the query's flags, its start bounded by the
// node's timeout, its stdin ended with the requests.
func TestNodeRelayGivesEveryLineItsHost(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	far := &farRelay{answer: func(in []string) []string {
		return []string{farReady, farReceipt,
			`{"type":"refusal","id":"b","line":2,"reason":"not_live","detail":"no such session"}`,
			`{"type":"inbound","text":"hi","fromName":"one","from":"uds:/x.sock","at":"2024-01-01T00:00:00Z"}`}
	}}
	n := sshhost.NewNode(far, d, 7*time.Second)
	got, err := relayLines(t, n, `{"id":1,"to":"one","text":"a"}`+"\n"+`{"id":"b","to":"two","text":"b"}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"relay", "--timeout=30s", "--name=ci"}, far.call.Args)
	assert.Equal(t, 7*time.Second, far.call.StartTimeout)
	assert.True(t, far.call.EndInput)
	assert.Equal(t, []string{`{"id":1,"to":"one","text":"a"}`, `{"id":"b","to":"two","text":"b"}`}, far.got)
	require.Len(t, got, 4)
	assert.Equal(t, wire.RelayReady{Type: "ready", Host: "box", Protocol: 1, Name: "ci"}, got[0])
	rc, ok := got[1].(wire.RelayReceipt)
	require.True(t, ok, "%T", got[1])
	assert.Equal(t, "box", rc.Host)
	assert.Equal(t, 1, rc.Line)
	assert.Equal(t, "m1", rc.MsgID)
	rf, ok := got[2].(wire.RelayRefusal)
	require.True(t, ok, "%T", got[2])
	assert.Equal(t, "box", rf.Host)
	assert.Equal(t, "not_live", rf.Reason)
	in, ok := got[3].(wire.RelayInbound)
	require.True(t, ok, "%T", got[3])
	assert.Equal(t, "box", in.Host)
	assert.Equal(t, "hi", in.Text)
}

// A request the far relay had and did not answer before it ended gets a
// refusal outcome_unknown with its line and id (it may have been sent),
// and the relay ends host_unreachable, even when the far side exited 0.
func TestNodeRelayUnansweredIsOutcomeUnknown(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	far := &farRelay{answer: func([]string) []string { return []string{farReady, farReceipt} }}
	got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), `{"id":1,"to":"one","text":"a"}`+"\n\n"+`{"id":"x","to":"one","text":"b"}`)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	assert.Contains(t, r.Detail, "the relay on box ended (exit 0: bye)")
	require.Len(t, got, 3)
	rf, ok := got[2].(wire.RelayRefusal)
	require.True(t, ok, "%T", got[2])
	assert.Equal(t, wire.RelayRefusal{Type: "refusal", Host: "box", ID: json.RawMessage(`"x"`), Line: 3, Reason: "outcome_unknown", Detail: rf.Detail}, rf)
	assert.Contains(t, rf.Detail, "may have been sent")

	// Every request answered and exit 0: nil.
	far = &farRelay{answer: func([]string) []string { return []string{farReady, farReceipt} }}
	got, err = relayLines(t, sshhost.NewNode(far, d, time.Minute), `{"id":1,"to":"one","text":"a"}`+"\n")
	require.NoError(t, err)
	assert.Len(t, got, 2)
}

// A far line that is not this build's (an unknown key) ends the relay as
// a broken far side; it is not passed on, and what was unanswered is
// outcome_unknown.
func TestNodeRelayBrokenLineEndsIt(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	far := &farRelay{answer: func([]string) []string {
		return []string{farReady, `{"type":"receipt","line":1,"outcome":"queued","extra":1}`, farReceipt}
	}}
	got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), `{"id":1,"to":"one","text":"a"}`+"\n")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	assert.Contains(t, r.Detail, "not this build's output protocol")
	require.Len(t, got, 2, "%v", got)
	assert.IsType(t, wire.RelayReady{}, got[0])
	rf, ok := got[1].(wire.RelayRefusal)
	require.True(t, ok, "%T", got[1])
	assert.Equal(t, "outcome_unknown", rf.Reason)
	assert.Equal(t, 1, rf.Line)
	assert.Equal(t, "box", rf.Host)
}

// A request line over the bound is refused here, and a blank line goes in
// its place, so the far side's numbering stays the requests'.
func TestNodeRelayRefusesAnOversizeLineHere(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	far := &farRelay{answer: func([]string) []string {
		return []string{farReady, strings.Replace(farReceipt, `"line":1`, `"line":2`, 1)}
	}}
	long := `{"to":"one","text":"` + strings.Repeat("a", lines.MaxRequest) + `"}`
	got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), long+"\n"+`{"id":1,"to":"one","text":"a"}`+"\n")
	require.NoError(t, err)
	assert.Equal(t, []string{"", `{"id":1,"to":"one","text":"a"}`}, far.got)
	require.Len(t, got, 3)
	rf, ok := got[0].(wire.RelayRefusal)
	require.True(t, ok, "%T", got[0])
	assert.Equal(t, wire.RelayRefusal{Type: "refusal", Host: "box", Line: 1, Reason: "invalid_request", Detail: rf.Detail}, rf)
	assert.Contains(t, rf.Detail, "line 1 is over")
}

// An emit error (the relay's reader is gone) stops the relay with it.
func TestNodeRelayStopsOnAnEmitError(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	far := &farRelay{answer: func([]string) []string { return []string{farReady, farReceipt} }}
	gone := errors.New("gone")
	calls := 0
	err = sshhost.NewNode(far, d, time.Minute).Relay(t.Context(), wire.RelayQuery{Timeout: time.Second}, strings.NewReader(`{"id":1,"to":"one","text":"a"}`+"\n"),
		func(wire.RelayLine) error { calls++; return gone })
	assert.ErrorIs(t, err, gone)
	assert.Equal(t, 1, calls)
	assert.Equal(t, []string{"relay", "--timeout=1s"}, far.call.Args)
}

// lostRelay is a Remote whose relay's connection is lost at once, and
// whose Wait, as the real one's, waits until the request stream it copies
// there has been read out.
type lostRelay struct{}

func (lostRelay) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	panic("not called")
}

func (lostRelay) Stream(_ context.Context, c ports.RemoteCall) (ports.RemoteStream, error) {
	s := &lostStream{lines: make(chan []byte), copied: make(chan struct{})}
	close(s.lines)
	go func() {
		defer close(s.copied)
		buf := make([]byte, 512)
		for {
			if _, err := c.Stdin.Read(buf); err != nil {
				return
			}
		}
	}()
	return s, nil
}

type lostStream struct {
	lines  chan []byte
	copied chan struct{}
}

func (s *lostStream) Lines() <-chan []byte { return s.lines }

func (s *lostStream) Wait() (ports.RemoteResult, error) {
	<-s.copied
	return ports.RemoteResult{}, domain.Refuse(domain.ReasonHostUnreachable, "the connection to box was lost")
}

func (s *lostStream) Close() {}

// A relay whose connection is lost ends, though its requests' stream here
// stays open (a relay fed by a person or a program that has more to say):
// host_unreachable, not a relay that waits for the next request.
func TestNodeRelayEndsWhenTheConnectionIsLostWithRequestsOpen(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	requests, feed := io.Pipe()
	t.Cleanup(func() { _ = feed.Close() })
	done := make(chan error, 1)
	go func() {
		done <- sshhost.NewNode(lostRelay{}, d, time.Minute).Relay(t.Context(), wire.RelayQuery{Timeout: time.Second}, requests,
			func(wire.RelayLine) error { return nil })
	}()
	select {
	case err := <-done:
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason)
	case <-time.After(30 * time.Second):
		t.Fatal("the relay still waits for a request after its connection was lost")
	}
}

// A far relay's answer must be to a line that awaits one, with its id: an
// answer to a line never sent, a second answer, or one with another id is
// a broken far side, and the requests left unanswered are outcome_unknown.
func TestNodeRelayTakesOneAnswerPerRequest(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	requests := `{"id":1,"to":"one","text":"a"}` + "\n" + `{"id":2,"to":"one","text":"b"}` + "\n"
	for name, answer := range map[string]string{
		"a line never sent": `{"type":"receipt","id":1,"line":99,"outcome":"sent","msgId":"m","transport":"courier","sessionId":"s","pid":1,"name":"one","elapsedMs":1}`,
		"a line twice":      farReceipt,
		"another id":        `{"type":"receipt","id":"someone-else","line":2,"outcome":"sent","msgId":"m","transport":"courier","sessionId":"s","pid":1,"name":"one","elapsedMs":1}`,
		"line 0":            `{"type":"refusal","id":1,"line":0,"reason":"not_live","detail":"x"}`,
	} {
		far := &farRelay{answer: func([]string) []string { return []string{farReady, farReceipt, answer} }}
		got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), requests)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, name)
		var answered []int
		for _, l := range got {
			if n := l.Answers(); n > 0 {
				answered = append(answered, n)
			}
		}
		assert.Equal(t, []int{1, 2}, answered, "%s: each request answered once", name)
	}
}

// stillRelay is a Remote whose relay says ready, answers nothing more and
// never ends by itself: it ends when its stream is closed. got (when not
// nil) is closed once a request has reached it.
type stillRelay struct{ got chan struct{} }

func (stillRelay) Call(context.Context, ports.RemoteCall) (ports.RemoteResult, error) {
	panic("not called")
}

func (f stillRelay) Stream(_ context.Context, c ports.RemoteCall) (ports.RemoteStream, error) {
	s := &fakeStream{lines: make(chan []byte), closed: make(chan struct{})}
	go func() {
		buf := make([]byte, 512)
		for first := true; ; first = false {
			if _, err := c.Stdin.Read(buf); err != nil {
				return
			}
			if first && f.got != nil {
				close(f.got)
			}
		}
	}()
	go func() {
		defer close(s.lines)
		select {
		case s.lines <- []byte(farReady):
		case <-s.closed:
			return
		}
		<-s.closed
	}()
	return s, nil
}

// A far relay that goes silent with a request unanswered, or after the
// requests ended, ends within its bound (one send's and the host's):
// host_unreachable, the request outcome_unknown; interrupted (ctx) with a
// request unanswered, the same line and an outcome_unknown refusal.
func TestNodeRelayDoesNotWaitForever(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	q := wire.RelayQuery{Timeout: 20 * time.Millisecond}
	far := stillRelay{}
	run := func(ctx context.Context, requests io.Reader) ([]wire.RelayLine, error) {
		var got []wire.RelayLine
		err := sshhost.NewNode(far, d, 20*time.Millisecond).Relay(ctx, q, requests, func(l wire.RelayLine) error {
			got = append(got, l)
			return nil
		})
		return got, err
	}
	for name, requests := range map[string]string{"a request unanswered": `{"id":1,"to":"one","text":"a"}` + "\n", "after the end": ""} {
		got, err := run(t.Context(), strings.NewReader(requests))
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", name, err)
		assert.Equal(t, domain.ReasonHostUnreachable, r.Reason, name)
		if requests != "" {
			require.Len(t, got, 2, name)
			assert.Equal(t, "outcome_unknown", got[1].(wire.RelayRefusal).Reason, name)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	in, feed := io.Pipe()
	t.Cleanup(func() { _ = feed.Close() })
	far.got = make(chan struct{})
	go func() {
		_, _ = feed.Write([]byte(`{"id":1,"to":"one","text":"a"}` + "\n"))
		<-far.got // handed over there
		cancel()
	}()
	q.Timeout = time.Hour // no silence bound: the interruption ends it
	got, err := run(ctx, in)
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason)
	require.NotEmpty(t, got)
	assert.Equal(t, "outcome_unknown", got[len(got)-1].(wire.RelayRefusal).Reason)
}

// A far relay's receipt for another session than its request named (by
// full id, name or prefix) is not passed on: its line is refused
// outcome_unknown naming both, the relay ends outcome_unknown (exit 12)
// and what was left unanswered is outcome_unknown too. A stored durable
// request's receipt names no session yet: nothing to check. (Issue 41.)
func TestNodeRelayRefusesAReceiptForAnotherSession(t *testing.T) {
	d, err := domain.ParseDest("box")
	require.NoError(t, err)
	const id, other = "26df9a5b-d23c-4223-a45d-b9ec61fda652", "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	wrong := `{"type":"receipt","id":1,"line":1,"outcome":"queued","msgId":"m1","transport":"courier","sessionId":"` + other + `","pid":7,"name":"proj-90","elapsedMs":3}`
	for _, to := range []string{id, "proj-89", "26df9a5b", "cc-peer:v1:7:proj-89:/tmp/s.sock"} {
		far := &farRelay{answer: func([]string) []string { return []string{farReady, wrong} }}
		requests := `{"id":1,"to":"` + to + `","text":"a"}` + "\n" + `{"id":2,"to":"one","text":"b"}` + "\n"
		got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), requests)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%s: %v", to, err)
		assert.Equal(t, domain.ReasonOutcomeUnknown, r.Reason, to)
		assert.Equal(t, 12, wire.ExitCode(r.Reason), to)
		require.Len(t, got, 3, to)
		for i, line := range []int{1, 2} {
			rf, ok := got[i+1].(wire.RelayRefusal)
			require.True(t, ok, "%s: %T", to, got[i+1])
			assert.Equal(t, line, rf.Line, to)
			assert.Equal(t, "outcome_unknown", rf.Reason, to)
		}
		first := got[1].(wire.RelayRefusal)
		assert.Equal(t, json.RawMessage(`1`), first.ID, to)
		assert.Contains(t, first.Detail, "session "+other, to)
		assert.Contains(t, first.Detail, to, to)
	}
	stored := `{"type":"receipt","id":1,"line":1,"outcome":"stored","msgId":"","transport":"","sessionId":"","pid":0,"name":"","elapsedMs":3,"outbox":{"id":4,"state":"stored","expiresAt":"2030-01-01T00:00:00Z"}}`
	far := &farRelay{answer: func([]string) []string { return []string{farReady, stored} }}
	got, err := relayLines(t, sshhost.NewNode(far, d, time.Minute), `{"id":1,"to":"proj-89","text":"a","durable":60}`+"\n")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.IsType(t, wire.RelayReceipt{}, got[1])
}
