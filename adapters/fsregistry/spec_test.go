package fsregistry_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/adapters/fsregistry"
	"github.com/peerctl/peerctl/domain"
)

// Claude Code's rules, as its spec (spec.go) gives them to the domain:
// how a record is classified, what its listing shows, and what the
// identity rule makes of that.

// rec is a complete, addressable interactive record for pid.
func rec(pid int, id, name string) domain.Record {
	return domain.Record{
		File: strconv.Itoa(pid) + ".json", PID: pid, SessionID: id, Name: name, Kind: domain.KindInteractive,
		ProcStart: "100", SocketPath: "/tmp/cc-socks/" + strconv.Itoa(pid) + ".sock", Version: "2.1.328",
		Cwd: "/home/dev/src/shop",
	}
}

var alive = domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}

const (
	idA = "26df9a5b-d23c-4223-a45d-b9ec61fda652"
	idB = "a8f89b60-f614-4b1f-b979-950c805fd8b1"
	idC = "26df9a5c-0000-4000-8000-000000000003"
	idD = "d00d0000-0000-4000-8000-000000000004"
)

func TestSpecIsTheZeroHarness(t *testing.T) {
	assert.Equal(t, domain.HarnessClaudeCode, fsregistry.Kind)
	assert.Equal(t, "claude-code", domain.Harness(0).String(), "a record built without a harness is Claude Code's")
	assert.Equal(t, "Claude Code", fsregistry.Kind.Title())
	assert.Equal(t, fsregistry.EndpointPrefix, fsregistry.Kind.EndpointPrefix())
	ep, err := fsregistry.NewEndpoint(4652, "build:main 50%", "/tmp/cc-socks/4652.sock")
	require.NoError(t, err)
	assert.Equal(t, "cc-peer:v1:4652:build%3Amain 50%25:/tmp/cc-socks/4652.sock", ep.String())
	assert.Equal(t, "name", ep.Pins())
	back, err := domain.ParseEndpoint(ep.String())
	require.NoError(t, err)
	assert.Equal(t, ep, back)
}

func TestClassifyVerdicts(t *testing.T) {
	base := rec(4652, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89")
	with := func(f func(*domain.Record)) domain.Record { r := base; f(&r); return r }
	tests := []struct {
		name   string
		rec    domain.Record
		live   domain.Liveness
		want   domain.Verdict
		reason string // part of Entry.Reason
	}{
		{"live: all checks pass", base, alive, domain.VerdictLive, ""},
		{"live: procStart and domain unknown", base, domain.Liveness{Alive: domain.Yes, Unchecked: []string{"x"}}, domain.VerdictLive, ""},
		{"stale: pid gone", base, domain.Liveness{Alive: domain.No}, domain.VerdictStale, "pid 4652 is not running"},
		{"stale: pid could not be probed", base, domain.Liveness{Unchecked: []string{"kill(4652, 0): invalid argument"}}, domain.VerdictStale, "could not be probed: kill(4652, 0): invalid argument"},
		{"reused: start differs", base, domain.Liveness{Alive: domain.Yes, StartMatches: domain.No, ActualStart: "999"}, domain.VerdictReused, "started at 999, record says procStart 100"},
		{"foreign: other pid domain", with(func(r *domain.Record) { r.PIDDomain = "linux:other:pid:[1]" }), domain.Liveness{Alive: domain.Yes, DomainMatches: domain.No, OurDomain: "linux:ours:pid:[2]"}, domain.VerdictForeign, "pidDomain linux:other:pid:[1] is not ours (linux:ours:pid:[2])"},
		{"foreign wins over dead", base, domain.Liveness{Alive: domain.No, DomainMatches: domain.No}, domain.VerdictForeign, "not ours"},
		{"headless: print", with(func(r *domain.Record) { r.Kind = "print" }), alive, domain.VerdictHeadless, `kind "print"`},
		{"headless: background", with(func(r *domain.Record) { r.Kind = "background" }), alive, domain.VerdictHeadless, `kind "background"`},
		{"headless: no kind (Claude Code 2.1.328 does not list it either)", with(func(r *domain.Record) { r.Kind = "" }), alive, domain.VerdictHeadless, `record has no kind; only kind "interactive" is a peer`},
		{"headless: kind is case-sensitive", with(func(r *domain.Record) { r.Kind = "Interactive" }), alive, domain.VerdictHeadless, `kind "Interactive"`},
		{"headless wins over stale", with(func(r *domain.Record) { r.Kind = "print" }), domain.Liveness{Alive: domain.No}, domain.VerdictHeadless, "print"},
		{"misnamed", with(func(r *domain.Record) {
			r.Problem, r.ProblemVerdict = "file name 5031b.json is not 5031.json", domain.VerdictMisnamed
		}), alive, domain.VerdictMisnamed, "5031b.json"},
		{"malformed", domain.Record{File: "1.json", Problem: "not a JSON record", ProblemVerdict: domain.VerdictMalformed}, domain.Liveness{}, domain.VerdictMalformed, "not a JSON record"},
		{"problem without verdict is malformed", domain.Record{File: "1.json", Problem: "odd"}, domain.Liveness{}, domain.VerdictMalformed, "odd"},
		{"unreadable", domain.Record{File: "1.json", Problem: "symlink, not followed", ProblemVerdict: domain.VerdictUnreadable}, domain.Liveness{}, domain.VerdictUnreadable, "symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := domain.Classify(tt.rec, tt.live)
			assert.Equal(t, tt.want, e.Verdict, "verdict (reason %q)", e.Reason)
			assert.Equal(t, tt.want == domain.VerdictLive, e.Live())
			if tt.reason == "" {
				assert.Empty(t, e.Reason)
			} else {
				assert.Contains(t, e.Reason, tt.reason)
			}
			if tt.want != domain.VerdictLive {
				assert.False(t, e.Addressable, "only live entries are addressable")
				assert.True(t, e.Endpoint().IsZero())
			}
			assert.Equal(t, tt.live.Unchecked, e.Unchecked)
		})
	}
}

func TestClassifyAddressability(t *testing.T) {
	base := rec(4652, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89")
	tests := []struct {
		name string
		edit func(*domain.Record)
		why  string // "" means addressable
	}{
		{"complete", func(*domain.Record) {}, ""},
		{"no session id", func(r *domain.Record) { r.SessionID = "" }, "no sessionId"},
		{"no name", func(r *domain.Record) { r.Name = "" }, "no name"},
		{"no socket (2.1.224)", func(r *domain.Record) { r.SocketPath = ""; r.Version = "2.1.224" }, "no messagingSocketPath (Claude Code 2.1.224 publishes"},
		{"no socket, no version", func(r *domain.Record) { r.SocketPath = ""; r.Version = "" }, "record has no messagingSocketPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.edit(&r)
			e := domain.Classify(r, alive)
			assert.Equal(t, domain.VerdictLive, e.Verdict, "addressability never changes the verdict")
			if tt.why == "" {
				assert.True(t, e.Addressable)
				assert.Empty(t, e.Unaddressable)
				assert.Equal(t, "cc-peer:v1:4652:proj-89:/tmp/cc-socks/4652.sock", e.Endpoint().String())
				return
			}
			assert.False(t, e.Addressable)
			assert.Contains(t, e.Unaddressable, tt.why)
			assert.True(t, e.Endpoint().IsZero())
		})
	}
}

// Without a version the reason names no Claude Code release (it said
// "Claude Code of unknown version publishes no messaging socket").
func TestUnaddressableWithoutVersionNamesNoRelease(t *testing.T) {
	r := rec(4652, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89")
	r.SocketPath, r.Version = "", ""
	assert.Equal(t, "record has no messagingSocketPath", domain.Classify(r, alive).Unaddressable)
}

// TestClassifyHarnessMayList: what Claude Code 2.1.328's own listing shows
// of a record we do not call live (its rules, read from its listing code
// and measured with claude agents --json): the identity rule counts those.
func TestClassifyHarnessMayList(t *testing.T) {
	base := rec(4652, "s", "n")
	with := func(f func(*domain.Record)) domain.Record { r := base; f(&r); return r }
	reused := domain.Liveness{Alive: domain.Yes, StartMatches: domain.No, DomainMatches: domain.Yes, ActualStart: "999"}
	tests := []struct {
		name   string
		rec    domain.Record
		live   domain.Liveness
		want   domain.Verdict
		listed bool
		reason string
	}{
		{"reused, procStart a string: Claude Code compares it too", base, reused, domain.VerdictReused, false, "record says procStart 100"},
		{"reused, procStart a number: Claude Code does not compare it", with(func(r *domain.Record) { r.ProcStartNumber = true }), reused, domain.VerdictReused, true, "record says procStart 100"},
		{"reused by procStartFt, which Claude Code reads first", with(func(r *domain.Record) { r.ProcStartFt = "7" }), reused, domain.VerdictReused, false, "record says procStartFt 7"},
		// An empty string is a value to Claude Code: "" never matches a
		// process start, and parkedJobId "" parks the session.
		{"procStart written as an empty string: reused", with(func(r *domain.Record) { r.ProcStart, r.ProcStartEmpty = "", true }), domain.Liveness{Alive: domain.Yes, StartMatches: domain.No, DomainMatches: domain.Yes, ActualStart: "999"}, domain.VerdictReused, false, `record says procStart ""`},
		{"parkedJobId written as an empty string: parked", with(func(r *domain.Record) { r.ParkedEmpty = true }), alive, domain.VerdictHeadless, false, `parked (parkedJobId "")`},
		{"parked job: Claude Code does not list it", with(func(r *domain.Record) { r.ParkedJobID = "job-1" }), alive, domain.VerdictHeadless, false, `parked (parkedJobId "job-1")`},
		{"misnamed <pid>.json: Claude Code reads the file name's pid", with(func(r *domain.Record) {
			r.Problem, r.ProblemVerdict = "file name 4652.json is not 5031.json for pid 5031", domain.VerdictMisnamed
		}), alive, domain.VerdictMisnamed, true, "4652.json"},
		{"misnamed otherwise: Claude Code skips the file", with(func(r *domain.Record) {
			r.File = "4652b.json"
			r.Problem, r.ProblemVerdict = "file name 4652b.json is not 4652.json", domain.VerdictMisnamed
		}), alive, domain.VerdictMisnamed, false, "4652b.json"},
		{"misnamed 0-padded: Claude Code skips (and deletes) it", with(func(r *domain.Record) {
			r.File = "04652.json"
			r.Problem, r.ProblemVerdict = "file name 04652.json is not 4652.json", domain.VerdictMisnamed
		}), alive, domain.VerdictMisnamed, false, "04652.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := domain.Classify(tt.rec, tt.live)
			assert.Equal(t, tt.want, e.Verdict, e.Reason)
			assert.Equal(t, tt.listed, e.HarnessMayList)
			assert.Contains(t, e.Reason, tt.reason)
		})
	}
}

// The version in the reason is the record's claim: a 2.1.328 record
// without a socket must not read as "2.1.328 publishes no socket".
func TestUnaddressableVersionIsTheRecordsClaim(t *testing.T) {
	r := rec(4652, "26df9a5b-d23c-4223-a45d-b9ec61fda652", "proj-89")
	r.SocketPath = ""
	why := domain.Classify(r, alive).Unaddressable
	assert.NotContains(t, why, "Claude Code 2.1.328 publishes no")
	assert.Equal(t, "record has no messagingSocketPath (the record says Claude Code 2.1.328)", why)
}

// What Claude Code's listing shows of a record we do not call live
// decides whether it shares a name or socket with the target.
func TestResolveByClaudeCodesListing(t *testing.T) {
	a := domain.Classify(rec(4652, idA, "proj-89"), alive)
	finds := []struct {
		name    string
		entries []domain.Entry
		address string
		wantPID int
	}{
		{"a background session without a socket shares the name", []domain.Entry{a, func() domain.Entry {
			r := rec(6400, idD, "proj-89")
			r.SocketPath, r.Kind = "", "bg"
			return domain.Classify(r, alive)
		}()}, "proj-89", 4652},
		// Claude Code's listing ignores pidDomain but drops dead pids and
		// wrong procStarts: such a foreign record cannot confuse the courier.
		{"foreign record whose pid is not running here is ignored", []domain.Entry{a,
			domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{DomainMatches: domain.No, Alive: domain.No})}, "proj-89", 4652},
		{"a zombie whose start time is another process's is ignored", []domain.Entry{a,
			domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{Alive: domain.No, Zombie: true, StartMatches: domain.No})}, "proj-89", 4652},
		{"a foreign zombie whose start time is another process's is ignored", []domain.Entry{a,
			domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{DomainMatches: domain.No, Alive: domain.No, Zombie: true, StartMatches: domain.No})}, "proj-89", 4652},
		{"foreign record whose pid here is another process is ignored", []domain.Entry{a,
			domain.Classify(rec(9000, idC, "proj-89"), domain.Liveness{DomainMatches: domain.No, Alive: domain.Yes, StartMatches: domain.No})}, "proj-89", 4652},
	}
	for _, tt := range finds {
		t.Run(tt.name, func(t *testing.T) {
			s, err := domain.Resolve(tt.entries, tt.address)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPID, s.PID())
			assert.True(t, s.Addressable())
		})
	}
	refuses := []struct {
		name       string
		entries    []domain.Entry
		address    string
		reason     domain.Reason
		detail     string
		candidates []int // pids, in order
	}{
		{"a record Claude Code lists publishes the socket", []domain.Entry{a, domain.Classify(func() domain.Record {
			r := rec(4800, idB, "other")
			r.SocketPath, r.ProcStartNumber = "/tmp/cc-socks/4652.sock", true
			return r
		}(), domain.Liveness{Alive: domain.Yes, StartMatches: domain.No, DomainMatches: domain.Yes})}, "proj-89", domain.ReasonIdentityMismatch, "is published by 2 records (1 we call live; Claude Code's own listing shows the others)", []int{4652, 4800}},
		// Claude Code reads a misnamed <pid>.json under its file name's
		// pid, and so does the refusal's candidate.
		{"a misnamed record publishes the socket: its candidate has the file's pid", []domain.Entry{a, domain.Classify(func() domain.Record {
			r := rec(5031, idB, "other")
			r.File, r.SocketPath = "4800.json", "/tmp/cc-socks/4652.sock"
			r.Problem, r.ProblemVerdict = "file name 4800.json is not 5031.json for pid 5031", domain.VerdictMisnamed
			return r
		}(), alive)}, "proj-89", domain.ReasonIdentityMismatch, "is published by 2 records (1 we call live; Claude Code's own listing shows the others)", []int{4652, 4800}},
	}
	for _, tt := range refuses {
		t.Run(tt.name, func(t *testing.T) {
			_, err := domain.Resolve(tt.entries, tt.address)
			r, ok := domain.AsRefusal(err)
			require.True(t, ok, "want a refusal, got %v", err)
			assert.Equal(t, tt.reason, r.Reason)
			assert.Contains(t, r.Detail, tt.detail)
			var pids []int
			for _, c := range r.Candidates {
				pids = append(pids, c.PID)
			}
			assert.Equal(t, tt.candidates, pids)
		})
	}
}
