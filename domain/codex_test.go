package domain

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassifyCodex(t *testing.T) {
	alive := Liveness{Alive: Yes, StartMatches: Yes}
	rec := Record{Harness: HarnessCodex, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", SocketPath: "/h/app-server-control/app-server-control.sock", ProcStart: "7"}
	for _, tc := range []struct {
		name        string
		mod         func(*Record)
		live        Liveness
		want        Verdict
		addressable bool
	}{
		{"client has it open", func(*Record) {}, alive, VerdictLive, true},
		{"daemon alone holds it", func(r *Record) { r.Problem, r.ProblemVerdict = "no client", VerdictHeadless }, alive, VerdictHeadless, false},
		{"cannot tell", func(r *Record) { r.Problem, r.ProblemVerdict = "two threads, one client", VerdictAmbiguous }, alive, VerdictAmbiguous, false},
		{"holder gone", func(*Record) {}, Liveness{Alive: No}, VerdictStale, false},
		{"holder pid reused", func(*Record) {}, Liveness{Alive: Yes, StartMatches: No, ActualStart: "9"}, VerdictReused, false},
		{"not a UUID", func(r *Record) { r.SessionID = "../../etc" }, alive, VerdictLive, false},
		{"relative socket", func(r *Record) { r.SocketPath = "x.sock" }, alive, VerdictLive, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			tc.mod(&r)
			e := Classify(r, tc.live)
			assert.Equal(t, tc.want, e.Verdict, e.Reason)
			assert.Equal(t, tc.addressable, e.Addressable, e.Unaddressable)
		})
	}
}

func TestCodexEndpointRoundTrip(t *testing.T) {
	ep, err := NewCodexEndpoint(42, "01a234d3-852a-7530-a429-495bba85092c", "/h/a:b.sock")
	require.NoError(t, err)
	s := ep.String()
	assert.Equal(t, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:/h/a%3Ab.sock", s)
	back, err := ParseEndpoint(s)
	require.NoError(t, err)
	assert.Equal(t, HarnessCodex, back.Harness())
	assert.Equal(t, ep, back)
	assert.True(t, IsEndpoint(s))
	_, err = ParseEndpoint("codex-peer:v2:42:x:/s")
	assert.ErrorIs(t, err, ErrBadEndpoint)
}

func TestCodexSharedSocketIsNotAProblem(t *testing.T) {
	a := Entry{Verdict: VerdictLive, Addressable: true, Record: Record{Harness: HarnessCodex, PID: 1, SessionID: "a", SocketPath: "/h/s.sock"}}
	b := a
	b.Record.PID, b.Record.SessionID = 2, "b"
	what, _ := SharedSocket([]Entry{a, b}, a)
	assert.Empty(t, what, "every thread of a Codex home shares its control socket")
}

func TestIsUUID(t *testing.T) {
	assert.True(t, IsUUID("01a234d3-852a-7530-a429-495bba85092c"))
	for _, bad := range []string{"", "01a234d3-852a-7530-a429-495bba85092", "01a234d3_852a-7530-a429-495bba85092c", "01a234d3-852a-7530-a429-495bba85092g", "../../../../../../../../../../etc/x"} {
		assert.False(t, IsUUID(bad), bad)
	}
}

// An endpoint taken from list resolves back to its thread (it pins the
// thread id, not the title).
func TestCodexEndpointResolves(t *testing.T) {
	e := Classify(Record{Harness: HarnessCodex, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", Name: "hello",
		SocketPath: "/tmp/codex-daemon-0/abc", ProcStart: "7"}, Liveness{Alive: Yes, StartMatches: Yes})
	require.True(t, e.Addressable)
	got, err := Resolve([]Entry{e}, e.Endpoint().String())
	require.NoError(t, err)
	assert.Equal(t, e.Record.SessionID, got.ID())
}

// A --no-daemon TUI's thread is served by no socket (issue 28, case 1: a
// home where no daemon ever ran): it is addressable, Codex's queue reaches
// it, and its endpoint (…:queue) resolves back to it; a daemon thread's
// endpoint does not name it.
func TestCodexNoDaemonThreadIsAddressableWithoutASocket(t *testing.T) {
	rec := Record{Harness: HarnessCodex, Kind: CodexKindNoDaemon, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", ProcStart: "7"}
	e := Classify(rec, Liveness{Alive: Yes, StartMatches: Yes})
	require.Equal(t, VerdictLive, e.Verdict, e.Reason)
	require.True(t, e.Addressable, e.Unaddressable)
	ep := e.Endpoint().String()
	assert.Equal(t, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:queue", ep)
	got, err := Resolve([]Entry{e}, ep)
	require.NoError(t, err)
	assert.Equal(t, rec.SessionID, got.ID())
	assert.Empty(t, got.SocketPath(), "it publishes no socket")

	_, err = Resolve([]Entry{e}, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:/tmp/codex-daemon-0/s")
	r, ok := AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, ReasonIdentityMismatch, r.Reason)
}

// A send to a Codex thread that is ambiguous or headless says why it is
// not live, not "no live session matches" (issue 28).
func TestCodexAmbiguousThreadIsNamedInTheRefusal(t *testing.T) {
	for _, v := range []Verdict{VerdictAmbiguous, VerdictHeadless} {
		rec := Record{Harness: HarnessCodex, File: "01a234d3-852a-7530-a429-495bba85092c", SessionID: "01a234d3-852a-7530-a429-495bba85092c", PID: 42,
			Problem: "which client has it open cannot be told", ProblemVerdict: v}
		e := Classify(rec, Liveness{})
		_, err := Resolve([]Entry{e}, rec.SessionID)
		r, ok := AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, ReasonNotLive, r.Reason)
		assert.Contains(t, r.Detail, "is "+v.String()+" (which client has it open cannot be told)")
	}
}
