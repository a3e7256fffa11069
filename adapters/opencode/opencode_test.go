package opencode

import (
	"bytes"
	"context"
	"encoding/json"

	"log/slog"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/internal/sockowner"
	"github.com/peerctl/peerctl/domain"
)

const sid = "ses_dc8e2c8afffe1ZXzAqgdFW043E"

func TestModeOf(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"opencode"}, KindPlainTUI},
		{[]string{"opencode", "/some/project"}, KindPlainTUI},
		{[]string{"opencode", "--port", "0"}, KindTUI},
		{[]string{"opencode", "--port=4096"}, KindTUI},
		{[]string{"opencode", "--hostname", "127.0.0.1"}, KindTUI},
		{[]string{"opencode", "serve", "--port", "4096"}, KindServe},
		{[]string{"opencode", "--print-logs", "serve"}, KindServe},
		{[]string{"opencode", "web"}, KindServe},
		{[]string{"opencode", "attach", "http://127.0.0.1:4096", "--session", sid}, ""},
		{[]string{"opencode", "run", "hello"}, ""},
		{[]string{"opencode", "db", "path"}, ""},
		// Help and version print and exit: an installer's check is no TUI.
		{[]string{"opencode", "--version"}, ""},
		{[]string{"opencode", "-v"}, ""},
		{[]string{"opencode", "--help"}, ""},
		{[]string{"opencode", "--port", "0", "-h"}, ""},
		{[]string{"opencode", "serve", "--help"}, ""},
	} {
		assert.Equal(t, c.want, modeOf(c.args), "%q", c.args)
	}
}

func TestParseListener(t *testing.T) {
	const head = "   0: "
	tail := " 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0"
	for _, c := range []struct {
		name, addr string
		dial       string // "": not a listener peerctl dials
	}{
		{"127.0.0.1:4096", "0100007F:1000", "127.0.0.1:4096"},
		{"127.1.2.3", "0302017F:1000", "127.1.2.3:4096"},
		{"0.0.0.0: loopback of its family", "00000000:1000", "127.0.0.1:4096"},
		{"another address", "0101A8C0:1000", ""},
		{"::1", "00000000000000000000000001000000:1000", "[::1]:4096"},
		{":: : loopback of its family", "00000000000000000000000000000000:1000", "[::1]:4096"},
		{"::ffff:127.0.0.2", "0000000000000000FFFF00000200007F:1000", "127.0.0.2:4096"},
		{"::ffff:192.168.1.1", "0000000000000000FFFF00000101A8C0:1000", ""},
		{"port 0", "0100007F:0000", ""},
	} {
		ino, dial, ok := parseListener(head + c.addr + tail)
		assert.Equal(t, c.dial != "", ok, c.name)
		if ok {
			assert.Equal(t, uint64(4242), ino, c.name)
			assert.Equal(t, c.dial, dial, c.name)
		}
	}
	_, _, ok := parseListener(head + "0100007F:1000 0100007F:9999 01" + tail[30:])
	assert.False(t, ok, "an established connection is no listener")
	_, _, ok = parseListener("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	assert.False(t, ok, "the header")
}

// TestListeningOfThisProcess finds the addresses this test listens on by
// the sockets' inodes, as the registry finds a server's: each in its own
// family and address, a wildcard as loopback of its family.
func TestListeningOfThisProcess(t *testing.T) {
	for bind, want := range map[string]string{"127.0.0.2:0": "127.0.0.2", "[::1]:0": "::1", "0.0.0.0:0": "127.0.0.1", "[::]:0": "::1"} {
		network := "tcp6"
		if strings.HasPrefix(bind, "127") || strings.HasPrefix(bind, "0.") {
			network = "tcp4"
		}
		ln, err := net.Listen(network, bind)
		require.NoError(t, err, bind)
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		assert.Contains(t, Listening(osGetpid()), net.JoinHostPort(want, strconv.Itoa(port)), bind)
	}
}

var msgIDRE = regexp.MustCompile(`^msg_[0-9a-f]{12}[0-9A-Za-z]{14}$`)

func TestNewMessageID(t *testing.T) {
	at := time.UnixMilli(1796221005783)
	a, b := NewMessageID(at), NewMessageID(at)
	require.Regexp(t, msgIDRE, a)
	// (ms × 0x1000 + counter) mod 2^48, as opencode's own ids of that
	// millisecond (measured: msg_2371d6fd7001… at 1796221005783).
	assert.Equal(t, "msg_2371d6fd7001", a[:16])
	assert.Equal(t, "msg_2371d6fd7002", b[:16])
	later := NewMessageID(at.Add(time.Millisecond))
	ids := []string{later, b, a}
	sort.Strings(ids)
	assert.Equal(t, []string{a, b, later}, ids, "ids sort after older ones")
}

func TestValidSessionID(t *testing.T) {
	assert.True(t, ValidSessionID(sid))
	for _, bad := range []string{"", "ses_", "msg_dc8e2c8afffe1ZXzAqgdFW043E", sid + "x", "ses_dc8e2c8afffe1ZXzAqgdFW04:E", "ses_dc8e2c8afffe1ZXzAqgdFW04%E"} {
		assert.False(t, ValidSessionID(bad), bad)
	}
}

// session makes a live, addressable domain session of the fake's server.
func session(t testing.TB, addr string) domain.Session { return sessionStarted(t, addr, "99") }

// sessionStarted is session of a server process whose start is start.
func sessionStarted(t testing.TB, addr, start string) domain.Session {
	t.Helper()
	rec := domain.Record{Harness: Kind, File: "pid " + strconv.Itoa(osGetpid()) + " " + sid, PID: osGetpid(), ProcStart: start, SessionID: sid, Name: "a title",
		SocketPath: addr, Kind: KindServe}
	e := domain.Classify(rec, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
	require.True(t, e.Addressable, e.Unaddressable)
	s, err := domain.NewSession(e)
	require.NoError(t, err)
	return s
}

func message(t testing.TB, text string) domain.Message {
	m, err := domain.NewMessage(text)
	require.NoError(t, err)
	return m
}

func refusal(t *testing.T, err error) *domain.Refusal {
	t.Helper()
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "want a refusal, got %v", err)
	return r
}

func TestDeliverReceiptIsOpencodesEcho(t *testing.T) {
	f := newFake(t)
	text := "rebase please\n\ttabs, \"quotes\", ünïcode"
	rec, err := NewPrompt(Config{From: "worker\n1"}).Deliver(context.Background(), session(t, f.addr()), message(t, text))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome)
	assert.Regexp(t, msgIDRE, rec.MsgID)
	posts := f.postBodies()
	require.Len(t, posts, 1)
	var body struct {
		MessageID string `json:"messageID"`
		Parts     []struct{ Type, Text string }
	}
	require.NoError(t, json.Unmarshal([]byte(posts[0]), &body))
	assert.Equal(t, rec.MsgID, body.MessageID)
	require.Len(t, body.Parts, 2)
	assert.Equal(t, "[peerctl: a message from another session, from \"worker 1\"]\n", body.Parts[0].Text)
	assert.Equal(t, text, body.Parts[1].Text, "the text part is the text, byte for byte")
}

func TestDeliverRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		setup  func(*fakeServer)
		reason domain.Reason
		says   []string
		window time.Duration
	}{
		{"opencode refuses the post", func(f *fakeServer) {
			f.promptStatus, f.promptBody = 400, `{"name":"BadRequest","data":{"message":"Expected a string starting with \"msg\""}}`
		}, domain.ReasonDeliveryFailed, []string{"400 Bad Request", "Expected a string starting with", "nothing was sent"}, 0},
		{"no such session", func(f *fakeServer) { f.promptStatus, f.promptBody = 404, `{"name":"NotFoundError"}` },
			domain.ReasonDeliveryFailed, []string{"404", "NotFoundError"}, 0},
		{"a password is asked and none given", func(f *fakeServer) { f.password = "s3cret" },
			domain.ReasonDeliveryFailed, []string{"asks for a password", "OPENCODE_SERVER_PASSWORD"}, 0},
		{"the post never answers", func(f *fakeServer) { f.promptHang = true },
			domain.ReasonOutcomeUnknown, []string{"look before sending again"}, 0},
		{"the event stream says nothing", func(f *fakeServer) { f.eventsSilent = true },
			domain.ReasonDeliveryFailed, []string{"no event", "nothing was sent"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			c.setup(f)
			var log bytes.Buffer
			p := NewPrompt(Config{Timeout: 2 * time.Second, Log: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			start := time.Now()
			_, err := p.Deliver(context.Background(), session(t, f.addr()), message(t, "hi"))
			assert.Less(t, time.Since(start), 8*time.Second, "bounded")
			r := refusal(t, err)
			assert.Equal(t, c.reason, r.Reason, r.Detail)
			for _, s := range c.says {
				assert.Contains(t, r.Detail, s)
			}
			assert.NotContains(t, r.Detail+log.String(), "s3cret")
		})
	}
}

func TestDeliverNotAnEventStream(t *testing.T) {
	srv := newPlain(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>hello</html>")) })
	_, err := NewPrompt(Config{Timeout: 2 * time.Second}).Deliver(context.Background(), session(t, srv), message(t, "hi"))
	r := refusal(t, err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason)
	assert.Contains(t, r.Detail, "not an opencode server")
}

func TestDeliverNoEchoIsPostedNotDelivered(t *testing.T) {
	f := newFake(t)
	f.noEcho = true
	start := time.Now()
	rec, err := NewPrompt(Config{Window: 300 * time.Millisecond}).Deliver(context.Background(), session(t, f.addr()), message(t, "hi"))
	require.NoError(t, err)
	assert.Equal(t, "posted", rec.Outcome)
	assert.Contains(t, rec.Detail, "no message.updated for "+rec.MsgID)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestDeliverHugeEventLineEndsTheStream(t *testing.T) {
	f := newFake(t)
	f.eventPrefix = "data: {\"type\":\"x\",\"properties\":\"" + strings.Repeat("a", maxEventLine+10) + "\"}\n\n"
	_, err := NewPrompt(Config{Timeout: 5 * time.Second}).Deliver(context.Background(), session(t, f.addr()), message(t, "hi"))
	r := refusal(t, err)
	assert.Equal(t, domain.ReasonDeliveryFailed, r.Reason, "nothing is posted on a stream that cannot be read")
	assert.Empty(t, f.postBodies())
}

func TestPasswordFromTheEnvironmentIsSentNeverShown(t *testing.T) {
	f := newFake(t)
	f.password = "s3cret"
	h, err := New(settings(map[string]string{PasswordEnv: "s3cret"}))
	require.NoError(t, err)
	rec, err := h.Transports()[0].Deliver(context.Background(), session(t, f.addr()), message(t, "hi"))
	require.NoError(t, err)
	assert.Equal(t, "delivered", rec.Outcome)
	assert.NotContains(t, h.auth.String(), "s3cret")

	h, err = New(settings(map[string]string{PasswordEnv: "wrong"}))
	require.NoError(t, err)
	_, err = h.Transports()[0].Deliver(context.Background(), session(t, f.addr()), message(t, "hi"))
	r := refusal(t, err)
	assert.Contains(t, r.Detail, "refused peerctl's password")
	assert.NotContains(t, r.Detail, "wrong")
}

func TestPlanShowsThePost(t *testing.T) {
	p, err := NewPrompt(Config{}).Plan(session(t, "127.0.0.1:4096"), message(t, "hi"))
	require.NoError(t, err)
	assert.Equal(t, "POST http://127.0.0.1:4096/session/"+sid+"/prompt_async", p.Call)
	assert.Contains(t, p.Frame, `"text":"hi"`)
}

func TestCourierHearsTheAnswer(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	k, err := NewPrompt(Config{}).StartCourier(ctx)
	require.NoError(t, err)
	defer k.Close()
	target := session(t, f.addr())
	for _, text := range []string{"one", "two"} {
		rec, err := k.Send(ctx, target, message(t, text))
		require.NoError(t, err)
		require.Equal(t, "delivered", rec.Outcome)
		select {
		case in := <-k.Inbound():
			assert.Equal(t, "pong: "+text, in.Text)
			assert.True(t, in.IsReplyFrom(target), "From %q", in.From)
		case <-ctx.Done():
			t.Fatal("no reply")
		}
	}
	require.NoError(t, k.Close())
	select {
	case <-k.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the courier running")
	}
}

func TestCourierIgnoresOthersAnswers(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := NewPrompt(Config{}).StartCourier(ctx)
	require.NoError(t, err)
	defer k.Close()
	f.noAnswer = true
	_, err = k.Send(ctx, session(t, f.addr()), message(t, "one"))
	require.NoError(t, err)
	// An answer to another message (a person's, typed in the TUI).
	f.push(map[string]any{"type": "message.updated", "properties": map[string]any{"info": map[string]any{"id": "msg_x", "role": "assistant",
		"sessionID": sid, "parentID": "msg_someone_else", "finish": "stop", "time": map[string]any{"completed": 2}}}})
	select {
	case in := <-k.Inbound():
		t.Fatalf("heard %+v", in)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestHealth(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		code int
		want error
	}{
		{"opencode", `{"healthy":true,"version":"1.18.33"}`, 200, nil},
		{"a web page", `<html>hi</html>`, 200, ErrNotOpencode},
		{"other JSON", `{"status":"ok"}`, 200, ErrNotOpencode},
		{"404", `{"healthy":true,"version":"1"}`, 404, ErrNotOpencode},
		{"huge", `{"healthy":true,"version":"` + strings.Repeat("9", maxHealthBody) + `"}`, 200, ErrNotOpencode},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := newPlain(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.code)
				_, _ = w.Write([]byte(c.body))
			})
			v, err := NewClient(addr, osGetpid(), Auth{}, sockowner.Prover{}).Health(context.Background())
			if c.want == nil {
				require.NoError(t, err)
				assert.Equal(t, "1.18.33", v)
				return
			}
			assert.ErrorIs(t, err, c.want)
		})
	}
}

func TestHealthOfAHangingServerIsBounded(t *testing.T) {
	addr := newPlain(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := NewClient(addr, osGetpid(), Auth{}, sockowner.Prover{}).Health(ctx)
	assert.Error(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestSessions(t *testing.T) {
	body := `[{"id":"` + sid + `","directory":"/w","title":"t","time":{"created":1796220991313,"updated":1796220991313}},` +
		`{"id":"bogus"},7,{"id":"ses_dc8e2c8afffe1ZXzAqgdFW043F","directory":"/w","time":{"archived":5}}]`
	addr := newPlain(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/w", r.URL.Query().Get("directory"))
		assert.Equal(t, "true", r.URL.Query().Get("roots"))
		_, _ = w.Write([]byte(body))
	})
	got, skipped, err := NewClient(addr, osGetpid(), Auth{}, sockowner.Prover{}).Sessions(context.Background(), "/w")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, sid, got[0].ID)
	assert.Len(t, skipped, 2, "bogus id and a number")

	for name, b := range map[string]string{"not JSON": "{", "an object": `{"a":1}`} {
		addr := newPlain(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(b)) })
		_, _, err := NewClient(addr, osGetpid(), Auth{}, sockowner.Prover{}).Sessions(context.Background(), "/w")
		assert.Error(t, err, name)
	}
}

func newPlain(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptestServer(t, h)
	return strings.TrimPrefix(srv, "http://")
}

func TestEndpointRoundTripAndResolve(t *testing.T) {
	rec := func(id string) domain.Record {
		return domain.Record{Harness: Kind, PID: 4242, ProcStart: "1", SessionID: id, Name: "t " + id, SocketPath: "127.0.0.1:4096", Kind: KindServe}
	}
	yes := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	other := "ses_dc8e2c8afffe1ZXzAqgdFW043F"
	entries := []domain.Entry{domain.Classify(rec(sid), yes), domain.Classify(rec(other), yes)}
	ep := entries[0].Endpoint()
	require.False(t, ep.IsZero())
	assert.Equal(t, "opencode-peer:v1:4242:"+sid+":127.0.0.1%3A4096", ep.String())
	back, err := domain.ParseEndpoint(ep.String())
	require.NoError(t, err)
	assert.Equal(t, Kind, back.Harness())

	// One server serves both sessions: the endpoint's session id picks
	// one, and the shared address is no reason to refuse.
	s, err := domain.Resolve(entries, ep.String())
	require.NoError(t, err)
	assert.Equal(t, sid, s.ID())
	s, err = domain.Resolve(entries, other)
	require.NoError(t, err)
	assert.Equal(t, other, s.ID())

	_, err = domain.ParseEndpoint("opencode-peer:v1:4242:not-a-session:127.0.0.1%3A4096")
	assert.ErrorIs(t, err, domain.ErrBadEndpoint)
	_, err = domain.ParseEndpoint("opencode-peer:v2:4242:" + sid + ":x")
	assert.ErrorIs(t, err, domain.ErrBadEndpoint)
	h, err := domain.ParseHarness("opencode")
	require.NoError(t, err)
	assert.Equal(t, Kind, h)
	assert.Contains(t, domain.Harnesses(), Kind)
}

func TestPlainTUIIsLiveNotAddressable(t *testing.T) {
	e := domain.Classify(domain.Record{Harness: Kind, PID: 4242, ProcStart: "1", Kind: KindPlainTUI, Cwd: "/w"},
		domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
	assert.True(t, e.Live())
	assert.False(t, e.Addressable)
	assert.Contains(t, e.Unaddressable, "opencode --port 0")
	assert.Contains(t, e.Unaddressable, "opencode attach")

	dead := domain.Classify(domain.Record{Harness: Kind, PID: 4242, ProcStart: "1", Kind: KindServe, SessionID: sid, SocketPath: "127.0.0.1:1"},
		domain.Liveness{Alive: domain.No})
	assert.Equal(t, domain.VerdictStale, dead.Verdict)
}

// $OPENCODE_PID, which opencode sets to its own pid, names the records of
// that process and no other; anything but a positive pid names none.
func TestSessionEnvNamesTheProcess(t *testing.T) {
	se := (&Harness{}).SessionEnv()
	require.Equal(t, "OPENCODE_PID", se.Var)
	rec := domain.Record{Harness: Kind, PID: 4242, SessionID: sid}
	assert.True(t, se.Names(rec, "4242"))
	for _, v := range []string{"4243", "0", "-4242", "4242 ", "x", ""} {
		assert.False(t, se.Names(rec, v), "%q", v)
	}
	assert.Contains(t, se.Markers, "OPENCODE")
}

// A --port TUI shows one session at a time and which one cannot be read:
// a message to one of its sessions is delivered, and its receipt says
// that no one may be watching (the rule beside Codex's, docs/OPENCODE.md).
// A server's receipt does not.
func TestDeliverToAPortTUISaysNoOneMayBeWatching(t *testing.T) {
	f := newFake(t)
	for kind, says := range map[string]bool{KindTUI: true, KindServe: false} {
		rec := session(t, f.addr()).Record()
		rec.Kind = kind
		e := domain.Classify(rec, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes})
		target, err := domain.NewSession(e)
		require.NoError(t, err)
		got, err := NewPrompt(Config{}).Deliver(context.Background(), target, message(t, "hi"))
		require.NoError(t, err, kind)
		assert.Equal(t, "delivered", got.Outcome, kind)
		assert.Equal(t, says, strings.Contains(got.Detail, "no one watching"), "%s: %s", kind, got.Detail)
	}
}

// A server bound to ::1 or 127.0.0.2 is addressable at that address, and
// its endpoint carries it; an address off loopback is not.
func TestEndpointOfAnotherLoopbackAddress(t *testing.T) {
	yes := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	for addr, ok := range map[string]bool{"[::1]:4096": true, "127.0.0.2:4096": true, "192.168.1.1:4096": false, "[::ffff:127.0.0.1]:4096": false, "[::1%lo]:4096": false} {
		e := domain.Classify(domain.Record{Harness: Kind, PID: 4242, ProcStart: "1", SessionID: sid, SocketPath: addr, Kind: KindServe}, yes)
		require.Equal(t, ok, e.Addressable, "%s: %s", addr, e.Unaddressable)
		if !ok {
			continue
		}
		back, err := domain.ParseEndpoint(e.Endpoint().String())
		require.NoError(t, err, e.Endpoint().String())
		assert.Equal(t, addr, back.Socket(), e.Endpoint().String())
	}
}
