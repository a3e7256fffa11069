package domain_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
)

// rec is a complete, addressable interactive record for pid.
func rec(pid int, id, name string) domain.Record {
	return domain.Record{
		File: strconv.Itoa(pid) + ".json", PID: pid, SessionID: id, Name: name, Kind: domain.KindInteractive,
		ProcStart: "100", SocketPath: "/tmp/cc-socks/" + strconv.Itoa(pid) + ".sock", Version: "2.1.328",
		Cwd: "/home/dev/src/shop",
	}
}

var alive = domain.Liveness{Alive: domain.Yes, StartMatches: domain.Yes, DomainMatches: domain.Yes}

func TestVerdictWords(t *testing.T) {
	var got []string
	for _, v := range domain.Verdicts() {
		got = append(got, v.String())
	}
	assert.Equal(t, []string{"live", "stale", "reused", "foreign", "misnamed", "headless", "malformed", "unreadable", "unsupported", "ambiguous"}, got)
	assert.Equal(t, "unknown", domain.VerdictUnknown.String())
	assert.Equal(t, "verdict(99)", domain.Verdict(99).String())
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

func TestTriWords(t *testing.T) {
	assert.Equal(t, "yes", domain.Yes.String())
	assert.Equal(t, "no", domain.No.String())
	assert.Equal(t, "unknown", domain.Unknown.String())
}

func TestMillisToTime(t *testing.T) {
	tm, ok := domain.MillisToTime(1796027521308)
	assert.True(t, ok)
	assert.Equal(t, int64(1796027521308), tm.UnixMilli())
	_, ok = domain.MillisToTime(1796027521) // seconds, not ms
	assert.False(t, ok)
	tm, ok = domain.MillisToTime(0)
	assert.False(t, ok)
	assert.True(t, tm.IsZero())
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
