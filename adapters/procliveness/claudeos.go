package procliveness

// The start-time and pid-domain formats of Claude Code's darwin and win32
// builds, as pure functions, so they are tested on any OS. Source: the
// JavaScript bundled in the npm packages @anthropic-ai/claude-code-darwin-arm64
// and @anthropic-ai/claude-code-win32-x64, 2.1.328 and 2.1.332
// (docs/CLAUDE-CODE-FACTS.md, "macOS and Windows builds").

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peerctl/peerctl/domain"
)

// LstartLayout is the Go layout of `LC_ALL=C TZ=UTC ps -o lstart= -p <pid>`
// on macOS, which the darwin build runs and trims to get a start time:
// strftime "%c" in the C locale, "%a %b %e %H:%M:%S %Y", in UTC, whole
// seconds, the day of the month padded with a space ("Tue Dec  1 15:17:44
// 2026").
const LstartLayout = "Mon Jan _2 15:04:05 2006"

// FormatLstart renders a process start as the darwin build records it in
// procStart: t in UTC, LstartLayout, fractions of a second dropped (ps
// prints p_starttime.tv_sec).
func FormatLstart(t time.Time) string { return t.UTC().Format(LstartLayout) }

// ParseLstart parses a darwin procStart. Only text FormatLstart would
// produce is accepted (so a value that parses compares as its text does).
func ParseLstart(s string) (time.Time, error) {
	t, err := time.ParseInLocation(LstartLayout, s, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a macOS ps lstart time %q: %w", s, err)
	}
	if FormatLstart(t) != s {
		return time.Time{}, fmt.Errorf("not a macOS ps lstart time %q: want %q", s, FormatLstart(t))
	}
	return t, nil
}

// DarwinPIDDomain is the pidDomain the darwin build writes on macOS: the
// platform name alone (no machine or namespace part).
const DarwinPIDDomain = "darwin"

// Win32PIDDomain is the pidDomain the win32 build writes on Windows:
// "win32:" and the host name (Node's os.hostname()) lower-cased. Windows
// host names are ASCII, where JavaScript's and Go's lower-casing agree.
func Win32PIDDomain(hostname string) string { return "win32:" + strings.ToLower(hostname) }

// FiletimeUnixEpoch is 1970-01-01 UTC as a Windows FILETIME: 100-ns
// intervals since 1601-01-01 UTC (the win32 build's constant
// 116444736000000000n).
const FiletimeUnixEpoch = 116444736000000000

// win32TickSplit is the win32 build's dividing line between the two start
// formats it may meet: a FILETIME of today is about 1.34e17, a .NET
// DateTime's Ticks (100-ns intervals since 0001-01-01, from its PowerShell
// fallback "(Get-CimInstance Win32_Process …).CreationDate.Ticks") about
// 6.39e17.
const win32TickSplit = 300000000000000000

// FormatFiletime renders a creation time as the win32 build records it in
// procStart: the 64-bit FILETIME of GetProcessTimes as decimal digits.
func FormatFiletime(ft uint64) string { return strconv.FormatUint(ft, 10) }

// FiletimeFromParts joins a FILETIME's two 32-bit halves.
func FiletimeFromParts(high, low uint32) uint64 { return uint64(high)<<32 | uint64(low) }

// FiletimeTime converts a FILETIME to a time (100-ns resolution).
func FiletimeTime(ft uint64) time.Time {
	d := int64(ft) - FiletimeUnixEpoch
	return time.Unix(d/1e7, d%1e7*100).UTC()
}

// CompareWin32Start compares a record's procStart with the pid's FILETIME
// text as the win32 build does: equal text is the same process; two
// numbers on either side of 3e17 (a FILETIME and a .NET Ticks value, which
// cannot be compared) count as the same process there, and here as
// Unknown, with the reason; any other difference is No.
func CompareWin32Start(record, actual string) (domain.Tri, string) {
	if record == actual {
		return domain.Yes, ""
	}
	r, rok := jsNumber(record)
	a, aok := jsNumber(actual)
	if rok && aok && (r > win32TickSplit) != (a > win32TickSplit) {
		return domain.Unknown, fmt.Sprintf("procStart %s and the pid's start %s are in different clocks (FILETIME and .NET ticks); Claude Code counts them the same", record, actual)
	}
	return domain.No, ""
}

// CompareDarwinStart compares a record's procStart with the pid's lstart
// text as the darwin build does: the same text, or not.
func CompareDarwinStart(record, actual string) domain.Tri {
	if record == actual {
		return domain.Yes
	}
	return domain.No
}

// jsNumber reads a run of decimal digits (surrounding whitespace allowed)
// as JavaScript's Number does, to a float64. Anything else reports false:
// the builds write digits only, and peerctl does not guess at other texts.
func jsNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
