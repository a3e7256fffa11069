package codex_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/codex"
	"github.com/peerctl/peerctl/domain"
)

func TestClassifyCodex(t *testing.T) {
	alive := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes}
	rec := domain.Record{Harness: codex.Kind, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", SocketPath: "/h/app-server-control/app-server-control.sock", ProcStart: "7"}
	for _, tc := range []struct {
		name        string
		mod         func(*domain.Record)
		live        domain.Liveness
		want        domain.Verdict
		addressable bool
	}{
		{"client has it open", func(*domain.Record) {}, alive, domain.VerdictLive, true},
		{"daemon alone holds it", func(r *domain.Record) { r.Problem, r.ProblemVerdict = "no client", domain.VerdictHeadless }, alive, domain.VerdictHeadless, false},
		{"cannot tell", func(r *domain.Record) {
			r.Problem, r.ProblemVerdict = "two threads, one client", domain.VerdictAmbiguous
		}, alive, domain.VerdictAmbiguous, false},
		{"holder gone", func(*domain.Record) {}, domain.Liveness{Alive: domain.No}, domain.VerdictStale, false},
		{"holder pid reused", func(*domain.Record) {}, domain.Liveness{Alive: domain.Yes, StartMatches: domain.No, ActualStart: "9"}, domain.VerdictReused, false},
		{"not a UUID", func(r *domain.Record) { r.SessionID = "../../etc" }, alive, domain.VerdictLive, false},
		{"relative socket", func(r *domain.Record) { r.SocketPath = "x.sock" }, alive, domain.VerdictLive, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			tc.mod(&r)
			e := domain.Classify(r, tc.live)
			assert.Equal(t, tc.want, e.Verdict, e.Reason)
			assert.Equal(t, tc.addressable, e.Addressable, e.Unaddressable)
		})
	}
}

func TestCodexEndpointRoundTrip(t *testing.T) {
	ep, err := codex.NewEndpoint(42, "01a234d3-852a-7530-a429-495bba85092c", "/h/a:b.sock")
	require.NoError(t, err)
	s := ep.String()
	assert.Equal(t, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:/h/a%3Ab.sock", s)
	back, err := domain.ParseEndpoint(s)
	require.NoError(t, err)
	assert.Equal(t, codex.Kind, back.Harness())
	assert.Equal(t, ep, back)
	assert.True(t, domain.IsEndpoint(s))
	_, err = domain.ParseEndpoint("codex-peer:v2:42:x:/s")
	assert.ErrorIs(t, err, domain.ErrBadEndpoint)
}

func TestCodexSharedSocketIsNotAProblem(t *testing.T) {
	a := domain.Entry{Verdict: domain.VerdictLive, Addressable: true, Record: domain.Record{Harness: codex.Kind, PID: 1, SessionID: "a", SocketPath: "/h/s.sock"}}
	b := a
	b.Record.PID, b.Record.SessionID = 2, "b"
	what, _ := domain.SharedSocket([]domain.Entry{a, b}, a)
	assert.Empty(t, what, "every thread of a Codex home shares its control socket")
}

func TestIsUUID(t *testing.T) {
	assert.True(t, codex.IsUUID("01a234d3-852a-7530-a429-495bba85092c"))
	for _, bad := range []string{"", "01a234d3-852a-7530-a429-495bba85092", "01a234d3_852a-7530-a429-495bba85092c", "01a234d3-852a-7530-a429-495bba85092g", "../../../../../../../../../../etc/x"} {
		assert.False(t, codex.IsUUID(bad), bad)
	}
}

// An endpoint taken from list resolves back to its thread (it pins the
// thread id, not the title).
func TestCodexEndpointResolves(t *testing.T) {
	e := domain.Classify(domain.Record{Harness: codex.Kind, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", Name: "hello",
		SocketPath: "/tmp/codex-daemon-0/abc", ProcStart: "7"}, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes})
	require.True(t, e.Addressable)
	got, err := domain.Resolve([]domain.Entry{e}, e.Endpoint().String())
	require.NoError(t, err)
	assert.Equal(t, e.Record.SessionID, got.ID())
}

// A --no-daemon TUI's thread is served by no socket (issue 28, case 1: a
// home where no daemon ever ran): it is addressable, Codex's queue reaches
// it, and its endpoint (…:queue) resolves back to it; a daemon thread's
// endpoint does not name it.
func TestCodexNoDaemonThreadIsAddressableWithoutASocket(t *testing.T) {
	rec := domain.Record{Harness: codex.Kind, Kind: codex.KindNoDaemon, PID: 42, SessionID: "01a234d3-852a-7530-a429-495bba85092c", ProcStart: "7"}
	e := domain.Classify(rec, domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes})
	require.Equal(t, domain.VerdictLive, e.Verdict, e.Reason)
	require.True(t, e.Addressable, e.Unaddressable)
	ep := e.Endpoint().String()
	assert.Equal(t, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:queue", ep)
	got, err := domain.Resolve([]domain.Entry{e}, ep)
	require.NoError(t, err)
	assert.Equal(t, rec.SessionID, got.ID())
	assert.Empty(t, got.SocketPath(), "it publishes no socket")

	_, err = domain.Resolve([]domain.Entry{e}, "codex-peer:v1:42:01a234d3-852a-7530-a429-495bba85092c:/tmp/codex-daemon-0/s")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
}

// A send to a Codex thread that is ambiguous or headless says why it is
// not live, not "no live session matches" (issue 28).
func TestCodexAmbiguousThreadIsNamedInTheRefusal(t *testing.T) {
	for _, v := range []domain.Verdict{domain.VerdictAmbiguous, domain.VerdictHeadless} {
		rec := domain.Record{Harness: codex.Kind, File: "01a234d3-852a-7530-a429-495bba85092c", SessionID: "01a234d3-852a-7530-a429-495bba85092c", PID: 42,
			Problem: "which client has it open cannot be told", ProblemVerdict: v}
		e := domain.Classify(rec, domain.Liveness{})
		_, err := domain.Resolve([]domain.Entry{e}, rec.SessionID)
		r, ok := domain.AsRefusal(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, domain.ReasonNotLive, r.Reason)
		assert.Contains(t, r.Detail, "is "+v.String()+" (which client has it open cannot be told)")
	}
}

// A codex-peer endpoint pins a thread id, a UUID: anything else is a bad
// endpoint, whatever it looks like.
func TestEndpointThreadIDIsAUUID(t *testing.T) {
	for _, bad := range []string{"codex-peer:v1:1:../../etc:/s", "codex-peer:v1:1:build:/s"} {
		ep, err := domain.ParseEndpoint(bad)
		require.ErrorIs(t, err, domain.ErrBadEndpoint, bad)
		assert.Contains(t, err.Error(), "not a UUID", bad)
		assert.True(t, ep.IsZero())
	}
}
