package procliveness

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/peerctl/peerctl/domain"
)

// checkRecord is the darwin and windows Check with the OS taken out: fed
// the answers each OS gives, in the formats of Claude Code's builds.
func TestCheckRecord(t *testing.T) {
	const pid = 4652
	alive := func(tri domain.Tri, why string) func(int) (domain.Tri, string) {
		return func(int) (domain.Tri, string) { return tri, why }
	}
	start := func(s string, exited bool, err error) func(int) (string, bool, error) {
		return func(int) (string, bool, error) { return s, exited, err }
	}
	darwinSame := func(r, a string) (domain.Tri, string) { return CompareDarwinStart(r, a), "" }
	gone := fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, fs.ErrNotExist)
	for _, tc := range []struct {
		name          string
		rec           domain.Record
		probe         osProbe
		ourDomain     string
		domainErr     error
		wantAlive     domain.Tri
		wantStart     domain.Tri
		wantDomain    domain.Tri
		wantZombie    bool
		wantUnchecked string
	}{
		{"darwin: live, same lstart, same domain",
			domain.Record{PID: pid, ProcStart: lstartSample, PIDDomain: "darwin"},
			osProbe{alive(domain.Yes, ""), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Yes, domain.Yes, domain.Yes, false, ""},
		{"darwin: pid reused (another lstart)",
			domain.Record{PID: pid, ProcStart: "Tue Dec  1 15:17:43 2026", PIDDomain: "darwin"},
			osProbe{alive(domain.Yes, ""), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Yes, domain.No, domain.Yes, false, ""},
		{"darwin: dead pid",
			domain.Record{PID: pid, ProcStart: lstartSample, PIDDomain: "darwin"},
			osProbe{alive(domain.No, ""), start("", false, errors.New("not asked")), darwinSame}, "darwin", nil,
			domain.No, domain.Unknown, domain.Yes, false, ""},
		{"darwin: exited between kill and sysctl",
			domain.Record{PID: pid, ProcStart: lstartSample},
			osProbe{alive(domain.Yes, ""), start("", false, gone), darwinSame}, "darwin", nil,
			domain.No, domain.Unknown, domain.Unknown, false, ""},
		{"darwin: a zombie is not running, its start still compared",
			domain.Record{PID: pid, ProcStart: lstartSample, PIDDomain: "darwin"},
			osProbe{alive(domain.Yes, ""), start(lstartSample, true, nil), darwinSame}, "darwin", nil,
			domain.No, domain.Yes, domain.Yes, true, ""},
		{"a Linux record on a Mac is of another domain",
			domain.Record{PID: pid, ProcStart: "35646", PIDDomain: "linux:0123:pid:[4026531836]"},
			osProbe{alive(domain.Yes, ""), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Yes, domain.No, domain.No, false, ""},
		{"sysctl failing otherwise leaves the start unknown",
			domain.Record{PID: pid, ProcStart: lstartSample, PIDDomain: "darwin"},
			osProbe{alive(domain.Yes, ""), start("", false, errors.New("sysctl: operation not permitted")), darwinSame}, "darwin", nil,
			domain.Yes, domain.Unknown, domain.Yes, false, "procStart not checked: sysctl: operation not permitted"},
		{"kill answering oddly is unknown",
			domain.Record{PID: pid, ProcStart: lstartSample},
			osProbe{alive(domain.Unknown, "kill(4652, 0): invalid argument"), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Unknown, domain.Unknown, domain.Unknown, false, "kill(4652, 0): invalid argument"},
		{"no procStart: pid reuse not checked",
			domain.Record{PID: pid, PIDDomain: "darwin"},
			osProbe{alive(domain.Yes, ""), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Yes, domain.Unknown, domain.Yes, false, "record has no procStart"},
		{"win32: same FILETIME",
			domain.Record{PID: pid, ProcStart: filetimeSample, PIDDomain: "win32:desktop-1"},
			osProbe{alive(domain.Yes, ""), start(filetimeSample, false, nil), CompareWin32Start}, "win32:desktop-1", nil,
			domain.Yes, domain.Yes, domain.Yes, false, ""},
		{"win32: .NET ticks in the record cannot be compared",
			domain.Record{PID: pid, ProcStart: netTicksSample, PIDDomain: "win32:desktop-1"},
			osProbe{alive(domain.Yes, ""), start(filetimeSample, false, nil), CompareWin32Start}, "win32:desktop-1", nil,
			domain.Yes, domain.Unknown, domain.Yes, false, "different clocks"},
		{"win32: another host's record",
			domain.Record{PID: pid, ProcStart: filetimeSample, PIDDomain: "win32:laptop-2"},
			osProbe{alive(domain.Yes, ""), start(filetimeSample, false, nil), CompareWin32Start}, "win32:desktop-1", nil,
			domain.Yes, domain.Yes, domain.No, false, ""},
		{"our domain unknown",
			domain.Record{PID: pid, ProcStart: filetimeSample, PIDDomain: "win32:desktop-1"},
			osProbe{alive(domain.Yes, ""), start(filetimeSample, false, nil), CompareWin32Start}, "", errors.New("host name: boom"),
			domain.Yes, domain.Yes, domain.Unknown, false, "pidDomain not checked: host name: boom"},
		{"procStartFt is the field compared when present",
			domain.Record{PID: pid, ProcStart: "x", ProcStartFt: filetimeSample},
			osProbe{alive(domain.Yes, ""), start(filetimeSample, false, nil), CompareWin32Start}, "win32:desktop-1", nil,
			domain.Yes, domain.Yes, domain.Unknown, false, "record has no pidDomain"},
		{"no pid",
			domain.Record{ProcStart: lstartSample},
			osProbe{alive(domain.Yes, ""), start(lstartSample, false, nil), darwinSame}, "darwin", nil,
			domain.Unknown, domain.Unknown, domain.Unknown, false, "no pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := checkRecord(tc.rec, tc.ourDomain, tc.domainErr, tc.probe)
			assert.Equal(t, tc.wantAlive, l.Alive, "alive")
			assert.Equal(t, tc.wantStart, l.StartMatches, "start")
			assert.Equal(t, tc.wantDomain, l.DomainMatches, "domain")
			assert.Equal(t, tc.wantZombie, l.Zombie, "zombie")
			assert.Equal(t, tc.ourDomain, l.OurDomain)
			if tc.wantUnchecked != "" {
				assert.Contains(t, fmt.Sprint(l.Unchecked), tc.wantUnchecked)
			}
		})
	}
}
