package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

const (
	idA = "26df9a5b-d23c-4223-a45d-b9ec61fda652"
	idB = "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	idC = "26df9a5c-0000-4000-8000-000000000003" // shares the 7-character prefix "26df9a5" with idA
	idD = "d00d0000-0000-4000-8000-000000000004"
	idE = "e0e0e0e0-0000-4000-8000-000000000005"
)

func liveEntry(pid int, id, name string) domain.Entry {
	return domain.Classify(rec(pid, id, name), alive)
}

func staleEntry(pid int, id, name string) domain.Entry {
	return domain.Classify(rec(pid, id, name), domain.Liveness{Alive: domain.No})
}

func TestResolveFinds(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	b := liveEntry(5031, idB, "build:main 50% ünï")
	d := liveEntry(7000, idD, "26df9a5b") // a name that is also a prefix of idA
	tests := []struct {
		name    string
		entries []domain.Entry
		address string
		wantPID int
	}{
		{"full session id", []domain.Entry{a, b}, idA, 4652},
		// SendMessage's candidates are the records with a socket: a live
		// 2.1.224 session (none) cannot be taken for the target.
		{"a live session without a socket shares the name", []domain.Entry{a, func() domain.Entry {
			r := rec(6400, idD, "proj-89")
			r.SocketPath, r.Version = "", "2.1.224"
			return domain.Classify(r, alive)
		}()}, idA, 4652},
		{"an unnamed session without a socket in a folder of that name", []domain.Entry{a, func() domain.Entry {
			r := rec(6400, idD, "")
			r.SocketPath, r.Cwd = "", "/home/dev/src/proj-89"
			return domain.Classify(r, alive)
		}()}, "proj-89", 4652},
		{"id prefix of 6", []domain.Entry{a, b}, "a8f89b", 5031},
		{"id prefix of 8", []domain.Entry{a, b}, "26df9a5b", 4652},
		{"exact name", []domain.Entry{a, b}, "proj-89", 4652},
		{"name with colon, percent and non-ASCII", []domain.Entry{a, b}, "build:main 50% ünï", 5031},
		{"endpoint", []domain.Entry{a, b}, "cc-peer:v1:5031:build%3Amain 50%25 ünï:/tmp/cc-socks/5031.sock", 5031},
		{"full id wins over a name equal to its prefix", []domain.Entry{a, d}, idA, 4652},
		{"full id wins over another session named like it", []domain.Entry{a, liveEntry(9, idB, idA)}, idA, 4652},
		{"stale record with the same name is ignored", []domain.Entry{a, staleEntry(1234, idC, "proj-89")}, "proj-89", 4652},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := domain.Resolve(tt.entries, tt.address)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPID, s.PID())
			assert.True(t, s.Addressable())
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	b := liveEntry(5031, idB, "build:main 50% ünï")
	twin := liveEntry(6000, idD, "proj-89")
	c := liveEntry(6100, idC, "other")
	d := liveEntry(7000, idD, "26df9a5b")
	stale := staleEntry(8000, idC, "gone-1")
	troubled := func(name string) domain.Entry {
		r := rec(8100, idC, name)
		r.Problem, r.ProblemVerdict = "its server is gone, its window still shows it", domain.VerdictStale
		return domain.Classify(r, alive)
	}
	sameID := liveEntry(4700, idA, "proj-90")
	// Another live record publishing a's socket (the same path, written
	// otherwise): a post there reaches whichever process bound it.
	sameSock := func(path string) domain.Entry {
		r := rec(4800, idB, "other")
		r.SocketPath = path
		return domain.Classify(r, alive)
	}
	tests := []struct {
		name       string
		entries    []domain.Entry
		address    string
		reason     domain.Reason
		detail     string
		candidates []int // pids, in order
	}{
		{"nothing matches", []domain.Entry{a, b}, "nobody", domain.ReasonNotLive, `no live session matches "nobody": peerctl list shows the live ones, and if it has ended, its transcript may still exist`, nil},
		{"empty registry", nil, idA, domain.ReasonNotLive, "transcript may still exist", nil},
		{"short prefix is not an address", []domain.Entry{a}, "26df9", domain.ReasonNotLive, "no live session matches", nil},
		{"stale by id", []domain.Entry{a, stale}, idC, domain.ReasonNotLive, "session " + idC + ` (pid 8000, "gone-1") is not live: 8000.json is stale (pid 8000 is not running); its transcript may still exist`, nil},
		{"stale by name", []domain.Entry{a, stale}, "gone-1", domain.ReasonNotLive, "8000.json is stale", nil},
		{"stale by prefix", []domain.Entry{a, stale}, "26df9a5c", domain.ReasonNotLive, "transcript may still exist", nil},
		{"two live sessions share a name", []domain.Entry{a, twin, b}, "proj-89", domain.ReasonIdentityMismatch, `"proj-89" matches 2 live sessions`, []int{4652, 6000}},
		{"prefix matching two", []domain.Entry{a, c}, "26df9a", domain.ReasonIdentityMismatch, `"26df9a" matches 2 live sessions`, []int{4652, 6100}},
		{"name of one is prefix of another", []domain.Entry{a, d}, "26df9a5b", domain.ReasonIdentityMismatch, "matches 2 live sessions", []int{4652, 7000}},
		{"endpoint: name moved", []domain.Entry{a}, "cc-peer:v1:4652:old-name:/tmp/cc-socks/4652.sock", domain.ReasonIdentityMismatch, `endpoint names "old-name" but pid 4652 is now named "proj-89"`, []int{4652}},
		{"endpoint: socket changed", []domain.Entry{a}, "cc-peer:v1:4652:proj-89:/tmp/elsewhere.sock", domain.ReasonIdentityMismatch, `endpoint socket "/tmp/elsewhere.sock" but pid 4652 now publishes "/tmp/cc-socks/4652.sock"`, []int{4652}},
		{"endpoint: pid not live", []domain.Entry{a, stale}, "cc-peer:v1:8000:gone-1:/tmp/cc-socks/8000.sock", domain.ReasonNotLive, "endpoint pid 8000: record 8000.json is stale (pid 8000 is not running); its transcript may still exist", nil},
		{"endpoint: pid unknown", []domain.Entry{a}, "cc-peer:v1:9999:x:/s", domain.ReasonNotLive, "no live session has pid 9999", nil},
		// A record with a problem that is the session pinned says it (a
		// Codex thread whose daemon died while its TUI still shows it);
		// another session's trouble is not quoted.
		{"endpoint: the pinned session's problem", []domain.Entry{a, troubled("gone-2")}, "cc-peer:v1:8100:gone-2:/tmp/cc-socks/8100.sock", domain.ReasonNotLive, "endpoint pid 8100: record 8100.json is stale (its server is gone, its window still shows it); its transcript may still exist", nil},
		{"endpoint: another's problem", []domain.Entry{a, troubled("gone-2")}, "cc-peer:v1:8100:other:/tmp/cc-socks/8100.sock", domain.ReasonNotLive, "no live session has pid 8100", nil},
		{"two live records carry the session id given", []domain.Entry{a, sameID}, idA, domain.ReasonIdentityMismatch, "session id " + idA + " is carried by 2 live records; refusing to guess", []int{4652, 4700}},
		{"two live records carry one session id", []domain.Entry{a, sameID}, "proj-89", domain.ReasonIdentityMismatch, "session id " + idA + " is carried by 2 live records", []int{4652, 4700}},
		{"two live records publish one socket", []domain.Entry{a, sameSock("/tmp/cc-socks/4652.sock")}, "proj-89", domain.ReasonIdentityMismatch, `socket "/tmp/cc-socks/4652.sock" is published by 2 live records`, []int{4652, 4800}},
		{"one socket written two ways", []domain.Entry{a, sameSock("/tmp//cc-socks/./4652.sock")}, idA, domain.ReasonIdentityMismatch, "is published by 2 live records", []int{4652, 4800}},
		{"one socket, by endpoint", []domain.Entry{a, sameSock("/tmp/cc-socks/4652.sock")}, "cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock", domain.ReasonIdentityMismatch, "is published by 2 live records", []int{4652, 4800}},
		// Another path to the same file on disk (a hard link, a linked
		// folder): what the path is counts, not its text.
		{"one socket under two paths", func() []domain.Entry {
			x, y := a, sameSock("/tmp/linked/4652.sock")
			x.SocketFile, y.SocketFile = "dev:ino", "dev:ino"
			return []domain.Entry{x, y}
		}(), idA, domain.ReasonIdentityMismatch, `socket "/tmp/cc-socks/4652.sock" is published by 2 live records (under other paths too: "/tmp/cc-socks/4652.sock", "/tmp/linked/4652.sock" are one socket`, []int{4652, 4800}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := domain.Resolve(tt.entries, tt.address)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, tt.reason, r.Reason)
			assert.Contains(t, r.Detail, tt.detail)
			var pids []int
			for _, c := range r.Candidates {
				pids = append(pids, c.PID)
				assert.NotEmpty(t, c.SessionID, "each candidate carries its id")
				if c.PID != 6200 || !strings.HasPrefix(tt.name, "an unnamed session") {
					assert.NotEmpty(t, c.Name, "each candidate carries its name")
				}
			}
			assert.Equal(t, tt.candidates, pids)
			assert.Zero(t, s.PID())
		})
	}
}

func TestResolveCandidatesCarryIDAndName(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	twin := liveEntry(6000, idD, "proj-89")
	_, err := domain.Resolve([]domain.Entry{twin, a}, "proj-89")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok)
	assert.Equal(t, []domain.Candidate{
		{SessionID: idA, Name: "proj-89", Harness: "claude-code", PID: 4652, File: "4652.json"},
		{SessionID: idD, Name: "proj-89", Harness: "claude-code", PID: 6000, File: "6000.json"},
	}, r.Candidates)
}

func TestResolveBadAddress(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	for _, addr := range []string{"", "   ", "cc-peer:v2:4652:proj-89:/s", "cc-peer:v1:0:n:/s", "cc-peer:v1:4652:a%3ab:/s"} {
		t.Run(addr, func(t *testing.T) {
			_, err := domain.Resolve([]domain.Entry{a}, addr)
			assert.ErrorIs(t, err, domain.ErrBadAddress)
			_, isRefusal := domain.AsRefusal(err)
			assert.False(t, isRefusal, "a malformed address is a usage error, not a refusal")
		})
	}
}

func TestResolveUnaddressableIsStillResolved(t *testing.T) {
	r := rec(4652, idA, "proj-89")
	r.SocketPath = ""
	s, err := domain.Resolve([]domain.Entry{domain.Classify(r, alive)}, "proj-89")
	require.NoError(t, err, "resolving finds the session; the caller refuses it as not_addressable")
	assert.False(t, s.Addressable())
	assert.Contains(t, s.Unaddressable(), "no messagingSocketPath")
	assert.True(t, s.Endpoint().IsZero())
}

func TestNewSessionRefusesNonLive(t *testing.T) {
	_, err := domain.NewSession(staleEntry(1, idA, "x"))
	assert.ErrorIs(t, err, domain.ErrNotLiveEntry)
}

// TestResolveAdviceIsNeverRefused: an ambiguous-address refusal advises a
// full session id or endpoint, and each candidate's full id and endpoint
// do resolve to it: the courier addresses the socket (uds:), so a shared
// name stands in the way of nothing but the name itself.
func TestResolveAdviceIsNeverRefused(t *testing.T) {
	a := liveEntry(4652, idA, "twin")
	twin := liveEntry(6000, idD, "twin")
	c := liveEntry(6100, idC, "other")
	for _, tt := range []struct {
		name    string
		entries []domain.Entry
		address string
	}{
		{"shared name", []domain.Entry{a, twin}, "twin"},
		{"prefix over two unique names", []domain.Entry{liveEntry(4652, idA, "one"), c}, "26df9a"},
		{"prefix over a shared and a unique name", []domain.Entry{a, twin, c}, "26df9a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := domain.Resolve(tt.entries, tt.address)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			require.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
			assert.Contains(t, r.Detail, "use the full session id or endpoint of the one you mean")
			require.NotEmpty(t, r.Candidates)
			for _, cand := range r.Candidates {
				s, err := domain.Resolve(tt.entries, cand.SessionID)
				require.NoError(t, err, "the advised full id %s", cand.SessionID)
				assert.Equal(t, cand.PID, s.PID())
				s2, err := domain.Resolve(tt.entries, s.Endpoint().String())
				require.NoError(t, err, "the advised endpoint")
				assert.Equal(t, cand.PID, s2.PID())
			}
		})
	}
}

// TestResolveSharedNameByIDOrEndpoint: a session whose name another record
// also carries (alike or exactly, live or listed only by Claude Code) is
// reached by its full id, a unique prefix or its endpoint.
func TestResolveSharedNameByIDOrEndpoint(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	for _, tt := range []struct {
		name    string
		other   domain.Entry
		address string
	}{
		{"a live twin, by full id", liveEntry(6000, idD, "proj-89"), idA},
		{"a live twin, by endpoint", liveEntry(6000, idD, "proj-89"), "cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock"},
		{"a name spelled alike", liveEntry(6200, idD, "PROJ-89"), "proj-89"},
		{"a foreign record with the name", domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{DomainMatches: domain.No}), "proj-89"},
		{"a zombie with the name", domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{DomainMatches: domain.Yes, Alive: domain.No, Zombie: true, StartMatches: domain.Yes}), "proj-89"},
		{"another session named like its id prefix", liveEntry(7000, idD, "26df9a5b"), idA},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := domain.Resolve([]domain.Entry{a, tt.other}, tt.address)
			require.NoError(t, err)
			assert.Equal(t, 4652, s.PID())
		})
	}
}

func TestLookupIgnoresTheIdentityRuleWithAWarning(t *testing.T) {
	a := liveEntry(4652, idA, "twin")
	twin := liveEntry(6000, idD, "twin")
	for _, tt := range []struct {
		address string
		pid     int
	}{
		{idA, 4652},
		{idD, 6000},
		{"d00d0000", 6000},
		{"cc-peer:v1:4652:twin:/tmp/cc-socks/4652.sock", 4652},
	} {
		t.Run(tt.address, func(t *testing.T) {
			s, warnings, err := domain.Lookup([]domain.Entry{a, twin}, tt.address)
			require.NoError(t, err)
			assert.Equal(t, tt.pid, s.PID())
			require.Len(t, warnings, 1)
			assert.Contains(t, warnings[0], `name "twin" is carried by 2 live sessions: address this one by its full session id or endpoint`)
		})
	}
	other := rec(6000, idD, "solo")
	other.SocketPath = "/tmp/cc-socks/4652.sock"
	_, warnings, err := domain.Lookup([]domain.Entry{a, domain.Classify(other, alive)}, idA)
	require.NoError(t, err)
	require.Len(t, warnings, 1, "show warns of a shared socket")
	assert.Contains(t, warnings[0], `socket "/tmp/cc-socks/4652.sock" is published by 2 live records: sending to it is refused`)

	_, warnings, err = domain.Lookup([]domain.Entry{a, liveEntry(6000, idD, "solo")}, idA)
	require.NoError(t, err)
	assert.Empty(t, warnings, "a unique name warns of nothing")

	_, _, err = domain.Lookup([]domain.Entry{a, twin}, "twin")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "an ambiguous address is still refused")
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
	assert.Contains(t, r.Detail, "show one by its full session id or endpoint")
	assert.Len(t, r.Candidates, 2)
}

func TestResolveNotLiveHints(t *testing.T) {
	a := liveEntry(4652, idA, "proj-89")
	c := liveEntry(6100, idC, "other")
	tests := []struct {
		address string
		hint    string // "" for none
	}{
		{"26df9", "id prefixes need at least 6 characters"},
		{"26", "id prefixes need at least 6 characters"},
		{"26DF9A5B", "session ids are lower case"},
		{"26DF9", "id prefixes need at least 6 characters; session ids are lower case"},
		{"nobody", ""},
		{"zzz", ""},
		{"abcdef12", ""},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			_, err := domain.Resolve([]domain.Entry{a, c}, tt.address)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, domain.ReasonNotLive, r.Reason, "the reason stays not_live")
			if tt.hint == "" {
				assert.NotContains(t, r.Detail, "id prefixes")
				assert.NotContains(t, r.Detail, "lower case")
				return
			}
			assert.Contains(t, r.Detail, tt.hint)
			assert.NotContains(t, r.Detail, ") (", "one parenthesis, then the advice: %s", r.Detail)
		})
	}
}

func TestAndList(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"codex"}, "codex"},
		{[]string{"claude-code", "codex"}, "claude-code and codex"},
		{[]string{"claude-code", "qwen-code", "codex"}, "claude-code, qwen-code and codex"},
	} {
		assert.Equal(t, tc.want, domain.AndList(tc.words))
	}
}

// MayResolve judges a session another machine named for an address: the
// session Resolve finds for that address always passes, another never does
// when the address pins it (a full id, an endpoint); a name or a prefix
// passes each session it names.
func TestMayResolve(t *testing.T) {
	a := rec(4652, idA, "proj-89")
	ep := "cc-peer:v1:4652:proj-89:" + a.SocketPath
	for _, tc := range []struct {
		address string
		r       domain.Record
		want    bool
	}{
		{idA, a, true},
		{"proj-89", a, true},
		{"26df9a", a, true},
		{ep, a, true},
		{idB, a, false},
		{"proj-8", a, false},
		{"26df9", a, false},    // a prefix shorter than MinIDPrefix names nothing
		{"26DF9A5B", a, false}, // ids are compared as written
		{idA, rec(5031, idB, "other"), false},
		{ep, rec(4653, idA, "proj-89"), false},   // another pid
		{ep, rec(4652, idA, "proj-90"), false},   // the name the endpoint pins moved
		{"cc-peer:v1:4652:proj-89", a, false},    // no endpoint at all
		{"cc-peer:v2:4652:proj-89:/x", a, false}, // another version
		{"", rec(1, "", ""), false},              // nothing is named by no address
	} {
		assert.Equal(t, tc.want, domain.MayResolve(tc.r, tc.address), "%q for %s %q pid %d", tc.address, tc.r.SessionID, tc.r.Name, tc.r.PID)
	}
}

// No refusal names a session by an empty id: a live record without one
// (a process whose sessions cannot be listed, as a plain opencode TUI) is
// named by its harness, pid and name.
func TestRefusalsNeverNameAnEmptyID(t *testing.T) {
	live := domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}
	plain := domain.Classify(domain.Record{File: "pid 4242", PID: 4242, Name: "a TUI in w"}, live)
	require.True(t, plain.Live())
	assert.Equal(t, "session 1 (pid 7, \"n\")", domain.Record{SessionID: "1", PID: 7, Name: "n"}.Label())
	s, err := domain.NewSession(plain)
	require.NoError(t, err)
	assert.NotContains(t, s.Label(), "session  ")
	assert.Contains(t, s.Label(), "pid 4242 (\"a TUI in w\", no session id)")
	stale := domain.Classify(domain.Record{File: "4243.json", PID: 4243, Name: "gone"}, domain.Liveness{Alive: domain.No})
	_, err = domain.Resolve([]domain.Entry{stale}, "gone")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.NotContains(t, r.Detail, "session  ")
	assert.Contains(t, r.Detail, "pid 4243")
}

func TestDurableAddress(t *testing.T) {
	entries := []domain.Entry{
		{Record: domain.Record{SessionID: "26df9a5b-d23c-4223-a45d-b9ec61fda652", Name: "reviewer"}},
		{Record: domain.Record{SessionID: "a8f89b60-f614-4b1f-b979-950c805fd8b1", Name: "26df9a5b"}},
	}
	for _, ok := range []string{"26df9a5b-d23c-4223-a45d-b9ec61fda652", "reviewer", "26df9a5b", "a8f8", "nobody-yet",
		"cc-peer:v1:42:reviewer:%2Ftmp%2Fs.sock"} {
		assert.NoError(t, domain.DurableAddress(entries, ok), ok)
	}
	err := domain.DurableAddress(entries, "a8f89b60-f6")
	require.ErrorIs(t, err, domain.ErrBadAddress)
	require.ErrorIs(t, err, domain.ErrDurablePrefix)
	assert.Contains(t, err.Error(), "a8f89b60-f614-4b1f-b979-950c805fd8b1")
}

// A name two live sessions carry now is refused as a plain send refuses
// it, with both candidates: kept, it would later go to whichever is left.
// A name only one live session carries may still be stored.
func TestDurableAddressAmbiguousName(t *testing.T) {
	a, b := liveEntry(4101, idA, "alpha"), liveEntry(4102, idB, "alpha")
	err := domain.DurableAddress([]domain.Entry{a, b}, "alpha")
	r, ok := domain.AsRefusal(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, domain.ReasonIdentityMismatch, r.Reason)
	assert.Len(t, r.Candidates, 2)
	assert.NoError(t, domain.DurableAddress([]domain.Entry{a, staleEntry(4102, idB, "alpha")}, "alpha"))
}

func TestCount(t *testing.T) {
	assert.Equal(t, "0 live sessions", domain.Count(0, "live session"))
	assert.Equal(t, "1 live session", domain.Count(1, "live session"))
	assert.Equal(t, "2 servers", domain.Count(2, "server"))
}
