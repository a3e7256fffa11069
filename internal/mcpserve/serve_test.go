package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/mcptools"
	"github.com/peerctl/peerctl/ports/lines"
	"github.com/peerctl/peerctl/ports/wire"
	"github.com/peerctl/peerctl/test/testproc"
)

type out struct{ OK bool }

// fakeTools answers list_sessions at once; send_message blocks until its
// call's context ends, then reports that on cancelled.
func fakeTools(cancelled chan<- string) mcptools.Tools[out, out, out] {
	return mcptools.Tools[out, out, out]{
		List: func(context.Context, json.RawMessage, mcptools.ListArgs) (out, error) { return out{OK: true}, nil },
		Show: func(context.Context, json.RawMessage, mcptools.ShowArgs) (out, error) { return out{OK: true}, nil },
		Send: func(ctx context.Context, _ json.RawMessage, in mcptools.SendArgs) (out, error) {
			<-ctx.Done()
			cancelled <- in.Text
			return out{}, ctx.Err()
		},
	}
}

// server runs Serve over a pipe; write sends lines, answers reads what came
// back by raw id, and stop closes stdin and waits for Serve.
type server struct {
	t      *testing.T
	in     *io.PipeWriter
	out    testproc.Buffer
	errb   testproc.Buffer
	served chan error
	cancel context.CancelFunc // a signal: ends the calls still running
}

func startServer(t *testing.T, tools mcptools.Tools[out, out, out]) *server {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	s := &server{t: t, in: pw, served: make(chan error, 1), cancel: cancel}
	go func() {
		s.served <- Serve(ctx, tools, mcptools.Stdio{In: pr, Out: &s.out, Err: &s.errb, Version: "test"})
	}()
	s.write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *server) write(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(s.in, l+"\n")
		require.NoError(s.t, err, "the server stopped reading; stderr: %s", s.errb.String())
	}
}

// answer is one output line: its id as written, and its error code (0: a result).
type answer struct {
	id   string
	code int
}

func (s *server) answers() []answer {
	var got []answer
	for _, line := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(line), &m), line)
		a := answer{id: string(m.ID)}
		if m.Error != nil {
			a.code = m.Error.Code
		}
		got = append(got, a)
	}
	return got
}

// waitFor waits until an answer with the raw id is out.
func (s *server) waitFor(id string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		return strings.Contains(s.out.String(), `"id":`+id+`,`)
	}, time.Minute, 5*time.Millisecond, "no answer with id %s\nstdout: %s\nstderr: %s", id, s.out.String(), s.errb.String())
}

func (s *server) stop() {
	s.t.Helper()
	require.NoError(s.t, s.in.Close())
	require.NoError(s.t, <-s.served, "stderr: %s", s.errb.String())
}

// Every line that is not a request the server can serve gets the answer
// JSON-RPC 2.0 defines for it (-32700 parse error, -32600 invalid request;
// id null when the line's id cannot be read) and the server goes on: the
// SDK alone ends the session on the first such line, and every call still
// running then gets no answer.
func TestServeAnswersLinesThatAreNotRequestsAndGoesOn(t *testing.T) {
	s := startServer(t, fakeTools(nil))
	bad := []struct {
		line string
		want answer
	}{
		{`garbage`, answer{"null", -32700}},
		{"\xff\xfe{", answer{"null", -32700}},
		{`[]`, answer{"null", -32600}},
		{`null`, answer{"null", -32600}},
		{`{}`, answer{"null", -32600}},
		{`123`, answer{"null", -32600}},
		{`"x"`, answer{"null", -32600}},
		{`[{"jsonrpc":"2.0","id":70,"method":"tools/list"}]`, answer{"null", -32600}},
		{`{"jsonrpc":"1.0","id":71,"method":"tools/list"}`, answer{"71", -32600}},
		{`{"id":72,"method":"tools/list"}`, answer{"72", -32600}},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":73,"method":5}`, answer{"73", -32600}},
		{`{"jsonrpc":"2.0","id":74,"method":"tools/list","method":"tools/call"}`, answer{"74", -32600}},
		{`{"jsonrpc":"2.0","id":75,"method":"tools/call","params":{"name":"list_sessions","name":"send_message","arguments":{}}}`, answer{"75", -32600}},
		{`{"jsonrpc":"2.0","id":76,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"a","to":"b","text":"x"}}}`, answer{"76", -32600}},
		{`{"jsonrpc":"2.0","id":77,"id":78,"method":"tools/list"}`, answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":79,"error":"x"}`, answer{}}, // a malformed response: skipped
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":80,"method":"tools/list","params":` + strings.Repeat(`{"a":`, 1001) + `1` + strings.Repeat("}", 1001) + `}`, answer{"80", -32600}},
		{`{"jsonrpc":"2.0","id":81,"method":"tools/list","pad":"` + strings.Repeat("x", lines.MaxRequest) + `"}`, answer{"null", -32600}},
		{`{"jsonrpc":"2.0","id":82,"method":"tools/list","pad":"` + strings.Repeat("x", 16<<20) + `"}`, answer{"null", -32600}},
	}
	var want []answer
	for i, b := range bad {
		s.write(b.line, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+1))
		s.waitFor(fmt.Sprint(i + 1))
		if b.want != (answer{}) {
			want = append(want, b.want)
		}
		want = append(want, answer{fmt.Sprint(i + 1), 0})
	}
	s.stop()
	got := s.answers()
	require.NotEmpty(t, got)
	assert.Equal(t, answer{"0", 0}, got[0], "initialize")
	assert.Equal(t, want, got[1:], "stderr: %s", s.errb.String())
}

// A request's id comes back exactly as written: the SDK keeps only
// integers and strings, so 1.5 was answered as 1 and 1e2 as 100.
func TestServeEchoesIDsExactly(t *testing.T) {
	s := startServer(t, fakeTools(nil))
	ids := []string{`1.5`, `1e2`, `-0`, `12345678901234567890`, `"a"`, `"\u0041"`, `null`, `7`, `"peerctl-1"`}
	for _, id := range ids {
		s.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
		s.waitFor(id)
	}
	s.stop()
	got := s.answers()[1:]
	var want []answer
	for _, id := range ids {
		want = append(want, answer{id, 0})
	}
	assert.Equal(t, want, got)
}

// A call the client cancels (notifications/cancelled) ends its work and
// gets no answer (MCP 2025-06-18, cancellation: "SHOULD NOT send a
// response for the cancelled request"); the others are answered.
func TestServeHonoursCancellation(t *testing.T) {
	cancelled, started := make(chan string, 2), make(chan string, 2)
	tools := fakeTools(cancelled)
	send := tools.Send
	tools.Send = func(ctx context.Context, raw json.RawMessage, in mcptools.SendArgs) (out, error) {
		started <- in.Text
		return send(ctx, raw, in)
	}
	s := startServer(t, tools)
	var once sync.Once
	// On a failure, a signal first: the calls still running end, and stop
	// does not wait for them forever.
	defer once.Do(func() { s.cancel(); s.stop() })
	s.write(`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"a","text":"first"}}}`,
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"send_message","arguments":{"to":"a","text":"second"}}}`)
	// The cancellation names a call that runs: one that came before its
	// call was under way would name no call yet, and be dropped.
	for range 2 {
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatalf("the calls did not start; stderr: %s", s.errb.String())
		}
	}
	s.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.5,"reason":"changed my mind"}}`)
	select {
	case text := <-cancelled:
		assert.Equal(t, "first", text)
	case <-time.After(time.Minute):
		t.Fatalf("the cancelled call's work did not end; stderr: %s", s.errb.String())
	}
	s.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"no-such-call"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	s.waitFor("3")
	require.NoError(t, s.in.Close())
	select {
	case err := <-s.served:
		t.Fatalf("the server ended with \"two\" still running (%v)", err)
	case <-time.After(100 * time.Millisecond): // stdin closed: "two" is still served
	}
	s.cancel() // a signal ends "two"
	require.NoError(t, <-s.served, "stderr: %s", s.errb.String())
	once.Do(func() {})
	for _, a := range s.answers() {
		assert.NotEqual(t, "1.5", a.id, "the cancelled call is not answered: %s", s.out.String())
	}
}

// Every call read before stdin closed is answered before the server ends:
// a client that writes its requests and closes stdin at once (a pipe) got
// no answer at all, the SDK cancelling every call at the end of stdin.
func TestServeAnswersWhatWasReadBeforeStdinClosed(t *testing.T) {
	tools := fakeTools(nil)
	tools.List = func(context.Context, json.RawMessage, mcptools.ListArgs) (out, error) {
		time.Sleep(200 * time.Millisecond) // still running when stdin ends
		return out{OK: true}, nil
	}
	s := startServer(t, tools)
	s.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`)
	s.stop()
	assert.Equal(t, []answer{{"0", 0}, {"1", 0}, {"2", 0}}, s.answers(), "stderr: %s", s.errb.String())
}

// The instructions and the tools' descriptions name every harness, from
// the harness list, so that the next one cannot be forgotten (issue 28:
// they named Claude Code and Qwen Code only).
func TestToolsNameEveryHarness(t *testing.T) {
	s := startServer(t, fakeTools(make(chan string, 1)))
	s.write(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	s.waitFor("1")
	text := s.out.String()
	for _, h := range domain.Harnesses() {
		assert.GreaterOrEqual(t, strings.Count(text, h.Title()), 3, "%s: instructions, list_sessions and send_message", h.Title())
	}
	s.stop()
}

// A send_message call that asked for progress (a progress token) hears
// its send's moments as progress notifications: the receipt and what it
// waits for once the session has the message, then a target waiting on
// its user; a call without a token hears none.
func TestServeSendsProgressOfAWaitingSend(t *testing.T) {
	tools := fakeTools(nil)
	tools.Send = func(ctx context.Context, _ json.RawMessage, in mcptools.SendArgs) (out, error) {
		if tr := app.SendTraceFrom(ctx); tr != nil {
			sent := wire.Sent{Receipt: wire.Receipt{Outcome: "delivered", Name: "proj-89", Transport: "courier"}}
			tr.Handed(sent, app.Awaiting{Reply: true, Target: "proj-89", Until: time.Now().Add(time.Minute)})
			tr.TargetWaiting("dialog open")
		}
		return out{OK: true}, nil
	}
	s := startServer(t, tools)
	s.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","_meta":{"progressToken":"p1"},"arguments":{"to":"proj-89","text":"q","await_reply_seconds":60}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"proj-89","text":"q","await_reply_seconds":60}}}`)
	s.waitFor("1")
	s.waitFor("2")
	s.stop()
	var progress []string
	for _, line := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		var m struct {
			Method string `json:"method"`
			Params struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
				Message       string  `json:"message"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.Method == "notifications/progress" {
			assert.Equal(t, "p1", m.Params.ProgressToken)
			progress = append(progress, fmt.Sprintf("%g %s", m.Params.Progress, m.Params.Message))
		}
	}
	require.Len(t, progress, 2, "%s", s.out.String())
	assert.Regexp(t, `^1 delivered: "proj-89" .* by courier in 0s; waiting up to 1m0s \(until \d\d:\d\d:\d\d UTC\) for "proj-89" to reply; cancelling the call stops the wait`, progress[0])
	assert.Equal(t, `2 "proj-89" is waiting (dialog open): it waits on its user and takes nothing up until someone answers it there`, progress[1])
}
