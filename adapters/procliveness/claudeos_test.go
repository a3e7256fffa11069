package procliveness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/peerctl/peerctl/domain"
)

// Start times as the darwin and win32 builds of Claude Code 2.1.328 write
// them for one instant, 2026-12-01 15:17:44 UTC (docs/CLAUDE-CODE-FACTS.md):
// `LC_ALL=C TZ=UTC ps -o lstart=` trimmed; the GetProcessTimes FILETIME as
// digits; and the .NET Ticks of the win32 PowerShell fallback.
const (
	lstartSample   = "Tue Dec  1 15:17:44 2026"
	filetimeSample = "134406118640000000"
	netTicksSample = "639317350640000000"
)

var sampleInstant = time.Date(2026, 12, 1, 15, 17, 44, 0, time.UTC)

func TestFormatLstart(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want string
	}{
		{"the darwin build's sample", sampleInstant, lstartSample},
		{"a day of two digits has no pad", time.Date(2026, 11, 18, 21, 7, 35, 0, time.UTC), "Wed Nov 18 21:07:35 2026"},
		{"fractions of a second are dropped, not rounded", sampleInstant.Add(999 * time.Millisecond), lstartSample},
		{"another zone is shown in UTC (TZ=UTC)", sampleInstant.In(time.FixedZone("CET", 3600)), lstartSample},
		{"midnight", time.Date(2027, 1, 3, 0, 0, 0, 0, time.UTC), "Sun Jan  3 00:00:00 2027"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatLstart(tc.in))
		})
	}
}

func TestParseLstart(t *testing.T) {
	got, err := ParseLstart(lstartSample)
	require.NoError(t, err)
	assert.True(t, got.Equal(sampleInstant))
	for _, bad := range []string{
		"",
		"Tue Dec 1 15:17:44 2026",    // day not space-padded: not what ps prints
		" Tue Dec  1 15:17:44 2026",  // untrimmed: Claude Code trims
		"Mon Dec  1 15:17:44 2026",   // wrong weekday
		"Tue Dec  1 15:17:44 2026 ",  // trailing space
		"2026-12-01T15:17:44Z",       // not lstart
		"1796138264",                 // seconds, not lstart
		"Tue Dec  1 15:17:44.5 2026", // no fractions in %c
	} {
		_, err := ParseLstart(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestDarwinProcStart(t *testing.T) {
	p := DarwinProc{Stat: 3, StartSec: sampleInstant.Unix(), StartUsec: 999999, PPID: 1}
	assert.Equal(t, lstartSample, p.Start(), "ps prints tv_sec only")
	assert.False(t, p.Exited())
	for stat, exited := range map[int8]bool{1: false, 2: false, 3: false, 4: false, 5: true} {
		assert.Equal(t, exited, DarwinProc{Stat: stat}.Exited(), "p_stat %d", stat)
	}
}

func TestPIDDomains(t *testing.T) {
	assert.Equal(t, "darwin", DarwinPIDDomain)
	for _, tc := range []struct{ host, want string }{
		{"DESKTOP-4F2K9QX", "win32:desktop-4f2k9qx"},
		{"build-01", "win32:build-01"},
		{"", "win32:"},
	} {
		assert.Equal(t, tc.want, Win32PIDDomain(tc.host))
	}
}

func TestFiletime(t *testing.T) {
	ft := FiletimeFromParts(uint32(134406118640000000>>32), uint32(134406118640000000&0xffffffff))
	assert.Equal(t, uint64(134406118640000000), ft)
	assert.Equal(t, filetimeSample, FormatFiletime(ft))
	assert.True(t, FiletimeTime(ft).Equal(sampleInstant))
	assert.True(t, FiletimeTime(FiletimeUnixEpoch).Equal(time.Unix(0, 0)))
	assert.True(t, FiletimeTime(FiletimeUnixEpoch+1).Equal(time.Unix(0, 100)), "one FILETIME tick is 100 ns")
	assert.True(t, FiletimeTime(0).Equal(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)))
}

func TestCompareWin32Start(t *testing.T) {
	for _, tc := range []struct {
		name           string
		record, actual string
		want           domain.Tri
	}{
		{"the same FILETIME", filetimeSample, filetimeSample, domain.Yes},
		{"another FILETIME: pid reused", "134406118640000001", filetimeSample, domain.No},
		{".NET ticks in the record, FILETIME now: cannot compare", netTicksSample, filetimeSample, domain.Unknown},
		{"FILETIME in the record, .NET ticks now: cannot compare", filetimeSample, netTicksSample, domain.Unknown},
		{"two .NET ticks that differ", netTicksSample, "639317350650000000", domain.No},
		{"text compared as text", "0134406118640000000", filetimeSample, domain.No},
		{"an lstart text is not a number", lstartSample, filetimeSample, domain.No},
		{"empty procStart never matches", "", filetimeSample, domain.No},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := CompareWin32Start(tc.record, tc.actual)
			assert.Equal(t, tc.want, got)
			if tc.want == domain.Unknown {
				assert.Contains(t, why, "different clocks")
			} else {
				assert.Empty(t, why)
			}
		})
	}
}

func TestCompareDarwinStart(t *testing.T) {
	assert.Equal(t, domain.Yes, CompareDarwinStart(lstartSample, lstartSample))
	assert.Equal(t, domain.No, CompareDarwinStart("Tue Dec  1 15:17:45 2026", lstartSample), "one second later: another process")
	assert.Equal(t, domain.No, CompareDarwinStart("Tue Dec 1 15:17:44 2026", lstartSample), "text, not time: Claude Code compares strings")
	assert.Equal(t, domain.No, CompareDarwinStart("", lstartSample))
}

func TestWin32Alive(t *testing.T) {
	for _, tc := range []struct {
		name           string
		openErr, code  uint32
		want           domain.Tri
		whyContainsAny string
	}{
		{"opened and running", 0, win32StillActive, domain.Yes, ""},
		{"opened but exited (a handle keeps it)", 0, 0, domain.No, ""},
		{"no such pid", win32ErrorInvalidParameter, 0, domain.No, ""},
		{"not ours to open: alive, like EPERM", win32ErrorAccessDenied, 0, domain.Yes, ""},
		{"any other error is unknown", 1450, 0, domain.Unknown, "Windows error 1450"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Win32Alive(4652, tc.openErr, tc.code)
			assert.Equal(t, tc.want, got)
			if tc.whyContainsAny != "" {
				assert.Contains(t, why, tc.whyContainsAny)
			}
		})
	}
}
