package serve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/dashboard"
	"github.com/peerctl/peerctl/ports"
	"github.com/peerctl/peerctl/ports/wire"
)

// A plain send the service runs (a client's, or one typed into the
// dashboard) is remembered for the dashboard's Messages with how it ended,
// a refusal too; a dry run is not a send; the newest come first and at
// most maxCarried are kept.
func TestServiceRemembersThePlainSendsItCarried(t *testing.T) {
	s := newServer(t.Context(), Options{})
	set := homes(t)
	send := func(q wire.SendQuery) Answer {
		q.Timeout = 5 * time.Second
		return s.send(t.Context(), wire.SendOrder{Query: q, Settings: set}, nil)
	}
	a := send(wire.SendQuery{Address: "ghost", Text: "are the tests green?"})
	require.NotNil(t, a.Refusal)
	assert.Equal(t, "not_live", a.Refusal.Reason)
	assert.NotNil(t, send(wire.SendQuery{Address: "ghost", Text: "a dry run", DryRun: true}).Refusal)
	got := s.carriedSends()
	require.Len(t, got, 1, "the refused send, not the dry run")
	assert.Equal(t, "ghost", got[0].Address)
	assert.Equal(t, "are the tests green?", got[0].Text)
	assert.Equal(t, "refused", got[0].State, "the outbox's word, so the page's state filter finds it")
	assert.True(t, strings.HasPrefix(got[0].Reason, "not_live: "), "the refusal's word and detail kept: %s", got[0].Reason)
	assert.Contains(t, got[0].Reason, "ghost")
	assert.Zero(t, got[0].ID, "no outbox id: nothing to cancel or retry")

	ok := carriedSend{address: "proj-89", text: "rebase", started: time.Now(), receipt: wire.Receipt{OK: true, Transport: "courier", Outcome: "queued", MsgID: "m-1"}}
	s.carry(ok)
	msgs, err := webBackend{s: s}.Messages(t.Context(), dashboard.MessageQuery{State: "refused"})
	require.NoError(t, err)
	require.Len(t, msgs, 1, "the state filter")
	assert.Equal(t, "ghost", msgs[0].Address)
	msgs, err = webBackend{s: s}.Messages(t.Context(), dashboard.MessageQuery{Before: 9})
	require.NoError(t, err)
	assert.Empty(t, msgs, "the carried sends are on the first page only")
	msgs, err = webBackend{s: s}.Messages(t.Context(), dashboard.MessageQuery{})
	require.NoError(t, err, "no outbox: the carried sends alone")
	require.Len(t, msgs, 2)
	assert.Equal(t, "proj-89", msgs[0].Address, "newest first")
	assert.Equal(t, "delivered", msgs[0].State)
	assert.Equal(t, "courier", msgs[0].Transport)
	assert.Equal(t, "m-1", msgs[0].MsgID)
	assert.Equal(t, []string{"sent", "delivered"}, []string{msgs[0].History[0].State, msgs[0].History[1].State})

	for i := range maxCarried + 5 {
		ok.address = "a-" + strconv.Itoa(i)
		s.carry(ok)
	}
	got = s.carriedSends()
	assert.Len(t, got, maxCarried)
	assert.Equal(t, "a-"+strconv.Itoa(maxCarried+4), got[0].Address)
}

// TestCarriedSendsInTheOutboxWords: a carried send's chain and state use
// the outbox's words where they mean the same thing, so the page's state
// filter finds them, and keep the reason.
func TestCarriedSendsInTheOutboxWords(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Second)
	type step struct{ state, reason string }
	for _, tc := range []struct {
		name string
		cs   carriedSend
		want []step
	}{
		{"queued", carriedSend{receipt: wire.Receipt{OK: true, Outcome: "queued", Transport: "courier"}},
			[]step{{"sent", ""}, {"delivered", "the harness took it (queued)"}}},
		{"held", carriedSend{receipt: wire.Receipt{OK: true, Outcome: "held", Transport: "courier", Detail: "held by that session"}},
			[]step{{"sent", ""}, {"held", "held by that session"}}},
		{"refused", carriedSend{err: domain.Refuse(domain.ReasonNotLive, "no live session named %q", "ghost")},
			[]step{{"sent", ""}, {"refused", `not_live: no live session named "ghost"`}}},
		{"identity", carriedSend{err: domain.Refuse(domain.ReasonIdentityMismatch, "the name moved")},
			[]step{{"sent", ""}, {"refused", "identity_mismatch: the name moved"}}},
		{"outcome unknown", carriedSend{err: domain.Refuse(domain.ReasonOutcomeUnknown, "the connection broke")},
			[]step{{"sent", ""}, {"outcome_unknown", "outcome_unknown: the connection broke"}}},
		{"no reply here", carriedSend{receipt: wire.Receipt{Outcome: "queued"}, err: domain.Refuse(domain.ReasonNoReply, "none in 2m")},
			[]step{{"sent", ""}, {"delivered", "no_reply: none in 2m"}}},
		{"no reply there", carriedSend{host: "box", receipt: wire.Receipt{Outcome: "queued", Refusal: &wire.RefusalBody{Reason: "no_reply", Detail: "none in 2m"}}},
			[]step{{"sent", ""}, {"delivered", "no_reply: none in 2m"}}},
		{"taken up, replied", carriedSend{receipt: wire.Receipt{OK: true, Outcome: "delivered",
			Confirm: wire.Confirm{Wait: &wire.Wait{TakenUp: true, TakenUpAt: "2026-03-01T10:00:01Z"}}, Reply: &wire.Inbound{Text: "on main", FromName: "rev", At: "2026-03-01T10:00:02Z"}}},
			[]step{{"sent", ""}, {"delivered", "the harness took it (delivered)"}, {"taken_up", "the transcript shows the session took it up (its user line)"},
				{"replied", `the session replied (from "rev", 7 bytes): on main`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cs.address, tc.cs.text, tc.cs.started = "proj", "hi", start
			m := carried(tc.cs, end)
			var got []step
			for _, e := range m.History {
				got = append(got, step{e.State, e.Reason})
			}
			assert.Equal(t, tc.want, got)
			last := tc.want[len(tc.want)-1]
			assert.Equal(t, last.state, m.State)
			assert.Equal(t, last.reason, m.Reason)
			assert.Equal(t, tc.cs.host, m.Host)
			assert.Equal(t, "2026-03-01T10:00:00Z", m.History[0].At[:19]+"Z")
		})
	}
}

// TestServiceRemembersAHostSend: a plain send --host the service runs
// (a client's, or the page's to a host's session) is carried too, naming
// the host; a far refusal with its word and detail.
func TestServiceRemembersAHostSend(t *testing.T) {
	receipt := `{"ok":true,"outcome":"queued","transport":"courier","harness":"claude-code","sessionId":"3327af2a-a4a5-433e-b55c-1fb5f0a0ae29",` +
		`"pid":7,"name":"proj","endpoint":"cc-peer:v1:7:proj:/tmp/s.sock","msgId":"m-9","elapsedMs":5,"transportMs":4,"confirmed":false,"confirmMs":0}`
	refusal := `{"ok":false,"refusal":{"reason":"not_live","detail":"no live session named \"ghost\"","exitCode":3}}`
	f := &fakeRemote{results: map[string]ports.RemoteResult{"box": {Stdout: []byte(receipt)}, "lab": {Stdout: []byte(refusal), Code: 3}}}
	s := newServer(t.Context(), Options{Remote: func(wire.Settings) (ports.Remote, error) { return f, nil }})
	send := func(host, address, text string, dry bool) Answer {
		return s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: address, Text: text, DryRun: dry, Timeout: 5 * time.Second}, Host: host}, nil)
	}
	a := send("box", "proj", "rebase onto main", false)
	require.NotNil(t, a.Sent, "%+v", a)
	assert.Equal(t, 0, a.Sent.Code)
	a = send("lab", "ghost", "are you there?", false)
	require.NotNil(t, a.Refusal, "%+v", a)
	assert.Equal(t, "not_live", a.Refusal.Reason)
	send("box", "proj", "a dry run", true)
	// The page sends to a host's session by its endpoint there.
	res := webBackend{s: s}.Send(t.Context(), "ssh:v1:box:cc-peer:v1:7:proj:/tmp/s.sock", "from the page", 0)
	assert.Equal(t, 0, res.Code, "%s", res.Stderr)
	got := s.carriedSends()
	require.Len(t, got, 3, "every send, not the dry run")
	assert.Equal(t, "box", got[0].Host)
	assert.Equal(t, "cc-peer:v1:7:proj:/tmp/s.sock", got[0].Address)
	assert.Equal(t, "from the page", got[0].Text)
	got = got[1:]
	assert.Equal(t, "lab", got[0].Host)
	assert.Equal(t, "ghost", got[0].Address)
	assert.Equal(t, "refused", got[0].State)
	assert.Equal(t, `not_live: on lab: no live session named "ghost"`, got[0].Reason, "a far refusal names its host")
	assert.Equal(t, "box", got[1].Host)
	assert.Equal(t, "proj", got[1].Address)
	assert.Equal(t, "rebase onto main", got[1].Text)
	assert.Equal(t, "delivered", got[1].State)
	assert.Equal(t, "m-9", got[1].MsgID)
	assert.Equal(t, "3327af2a-a4a5-433e-b55c-1fb5f0a0ae29", got[1].SessionID)
}

// fakeRemote answers each host's calls with its result.
type fakeRemote struct {
	results map[string]ports.RemoteResult
	mu      sync.Mutex
	calls   []ports.RemoteCall
}

func (f *fakeRemote) Call(_ context.Context, c ports.RemoteCall) (ports.RemoteResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.results[c.Dest.String()], nil
}

func (f *fakeRemote) Stream(context.Context, ports.RemoteCall) (ports.RemoteStream, error) {
	return nil, domain.Refuse(domain.ReasonHostUnreachable, "no streams here")
}

// TestCarriedSendsTimesInOrder: a carried send's chain reads in time
// order: delivered at the hand-over's end (not after the reply wait),
// taken up and replied after it, a harness's time to the second that
// falls before the step it follows shown at that step's time.
func TestCarriedSendsTimesInOrder(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cs := carriedSend{address: "proj", text: "hi", started: start, receipt: wire.Receipt{OK: true, Outcome: "delivered", ElapsedMs: 1500,
		Confirm: wire.Confirm{Wait: &wire.Wait{TakenUp: true, TakenUpAt: "2026-03-01T10:00:05Z"}},
		Reply:   &wire.Inbound{Text: "on main", FromName: "rev", At: "2026-03-01T10:00:04Z"}}}
	m := carried(cs, start.Add(30*time.Second))
	var states, ats []string
	for _, e := range m.History {
		states = append(states, e.State)
		ats = append(ats, e.At)
	}
	assert.Equal(t, []string{"sent", "delivered", "taken_up", "replied"}, states)
	assert.Equal(t, []string{"2026-03-01T10:00:00.000Z", "2026-03-01T10:00:01.500Z", "2026-03-01T10:00:05Z", "2026-03-01T10:00:05Z"}, ats)
	assert.True(t, slices.IsSortedFunc(m.History, func(a, b wire.OutboxEvent) int { return parseTime(a.At).Compare(parseTime(b.At)) }), "%v", ats)
}

// TestCarriedSendsNameTheirSender: a carried send names its order's
// sender: the dashboard for one typed into the page, the command line's
// for one it forwarded; none when the order said none.
func TestCarriedSendsNameTheirSender(t *testing.T) {
	s := newServer(t.Context(), Options{Settings: homes(t)})
	webBackend{s: s}.Send(t.Context(), "ghost", "from the page", 0)
	for _, sender := range []domain.Sender{domain.NewSender(domain.EntranceCLI, "").WithSession("lead", "lead-id"), {}} {
		s.send(t.Context(), wire.SendOrder{Query: wire.SendQuery{Address: "ghost", Text: "from peerctl send", Timeout: 5 * time.Second}, Settings: homes(t),
			Sender: sender}, nil)
	}
	got := s.carriedSends()
	require.Len(t, got, 3)
	assert.Nil(t, got[0].Sender)
	require.NotNil(t, got[1].Sender)
	assert.Equal(t, "cli:lead", got[1].Sender.As)
	require.NotNil(t, got[2].Sender)
	assert.Equal(t, "dashboard", got[2].Sender.As)
}

// TestCarriedSendsAreKeptAcrossRestarts: the plain sends shown on the
// page are kept in the state folder (0600): a service started again shows
// them, the newest maxCarried, those within the retention; a line cut
// short by a crash is skipped; the file is rewritten before it grows
// past twice that.
func TestCarriedSendsAreKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute).UTC()
	s := newServer(t.Context(), Options{})
	require.NoError(t, s.loadSent(dir, 0))
	weekAgo := start.Add(-7 * 24 * time.Hour)
	s.now = func() time.Time { return weekAgo.Add(time.Second) }
	s.carry(carriedSend{address: "old", text: "a week ago", sender: domain.NewSender(domain.EntranceCLI, ""), started: weekAgo})
	s.now = time.Now
	s.carry(carriedSend{address: "proj", text: "rebase", sender: domain.NewSender(domain.EntranceDashboard, ""), started: start, receipt: wire.Receipt{OK: true, Outcome: "queued", MsgID: "m-1"}})
	path := filepath.Join(dir, SentFileName)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"id":0,"state":"deliv`) // a crash while writing
	require.NoError(t, err)
	require.NoError(t, f.Close())

	again := newServer(t.Context(), Options{})
	require.NoError(t, again.loadSent(dir, 24*time.Hour))
	got := again.carriedSends()
	require.Len(t, got, 1, "the week-old send is past the retention; the cut line skipped")
	assert.Equal(t, "proj", got[0].Address)
	assert.Equal(t, "rebase", got[0].Text)
	require.NotNil(t, got[0].Sender)
	assert.Equal(t, "dashboard", got[0].Sender.As)
	assert.Equal(t, "m-1", got[0].MsgID)
	assert.Equal(t, "delivered", got[0].State)
	msgs, err := webBackend{s: again}.Messages(t.Context(), dashboard.MessageQuery{})
	require.NoError(t, err)
	require.Len(t, msgs, 1, "on the page after the restart")

	for i := range 3 * maxCarried {
		again.carry(carriedSend{address: "a-" + strconv.Itoa(i), text: "x", started: start})
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.LessOrEqual(t, bytes.Count(b, []byte("\n")), 2*maxCarried, "rewritten, not grown without end")
	third := newServer(t.Context(), Options{})
	require.NoError(t, third.loadSent(dir, 0))
	got = third.carriedSends()
	require.Len(t, got, maxCarried)
	assert.Equal(t, "a-"+strconv.Itoa(3*maxCarried-1), got[0].Address, "the newest first")
}
