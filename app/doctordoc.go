package app

import (
	"fmt"
	"strings"

	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports/wire"
)

// DoctorDoc is r, with mcp (where `peerctl mcp`'s server is), as `doctor
// --json`'s document: the checks, the harness plug-ins' objects, and the
// table for people (Rows, Summary) in its order: each harness's early
// rows, registry, sockets, reach, session, each harness's late rows, mcp.
// A warning of mcp joins the warnings.
func DoctorDoc(r Report, mcp wire.DoctorMCP) wire.Doctor {
	j := wire.Doctor{OK: r.OK, Problems: r.Problems, Warnings: r.Warnings, MCP: mcp}
	if j.Problems == nil {
		j.Problems = []string{}
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	if mcp.Health == HealthWarn.String() {
		j.Warnings = append(j.Warnings, mcp.Note)
	}
	for _, h := range r.Harnesses {
		j.Harnesses = append(j.Harnesses, wire.DoctorHarness{Key: h.Key, JSON: h.JSON})
	}
	j.Registry = wire.DoctorRegistry{Health: r.Registry.Health.String(), Dir: r.Registry.Dir, Missing: r.Registry.Missing, Counts: r.Registry.Counts}
	if r.Registry.Err != nil {
		j.Registry.Error = r.Registry.Err.Error()
	}
	j.SocketDirs = []wire.DoctorSocket{}
	for _, s := range r.Sockets {
		mode := ""
		if s.Mode != 0 || s.UID >= 0 {
			mode = fmt.Sprintf("%04o", uint32(s.Mode))
		}
		j.SocketDirs = append(j.SocketDirs, wire.DoctorSocket{Health: s.Health.String(), Dir: s.Dir, Mode: mode, UID: s.UID, Ours: s.Ours, Sessions: s.Sessions, Problem: s.Problem})
	}
	j.Reach = wire.DoctorReach{Health: HealthOK.String(), Reachable: r.Reachable, Unreachable: []wire.DoctorUnreachable{}}
	for _, u := range r.Reach {
		j.Reach.Health = HealthWarn.String()
		j.Reach.Unreachable = append(j.Reach.Unreachable, wire.DoctorUnreachable{SessionID: u.SessionID, Name: u.Name, PID: u.PID, SocketPath: u.SocketPath, Reason: u.Reason})
	}
	if len(r.Reach) == 0 && r.Reachable == 0 {
		j.Reach.Health = HealthSkip.String()
	}
	j.Session = wire.DoctorSession{Inside: r.Session.Inside, EnvVars: r.Session.EnvVars, Via: ViaNone.String(), Note: r.Session.Note}
	if j.Session.EnvVars == nil {
		j.Session.EnvVars = []string{}
	}
	if f := r.Session.Found; f != nil {
		rec := f.Entry.Record
		j.Session.Via, j.Session.SessionID, j.Session.Name, j.Session.PID = f.Via.String(), rec.SessionID, rec.Name, rec.PID
		j.Session.Endpoint = f.Entry.Endpoint().String()
	}
	j.Rows, j.Summary = doctorTable(r, j)
	return j
}

// doctorTable is the report's table for people and its last line.
func doctorTable(r Report, j wire.Doctor) ([]wire.DoctorRow, string) {
	rows := []wire.DoctorRow{}
	row := func(check, health, text string) {
		rows = append(rows, wire.DoctorRow{Check: check, Health: health, Text: text})
	}
	harnessRows := func(late bool) {
		for _, h := range r.Harnesses {
			for _, l := range h.Lines {
				if l.Late == late {
					row(l.Check, l.Health, l.Text)
				}
			}
		}
	}
	harnessRows(false)

	reg := j.Registry.Error
	switch {
	case reg != "":
	case j.Registry.Missing:
		reg = j.Registry.Dir + " does not exist; no Claude Code session has run with this config dir"
	default:
		var parts []string
		for _, v := range domain.Verdicts() {
			if n := j.Registry.Counts[v.String()]; n > 0 || v == domain.VerdictLive {
				parts = append(parts, fmt.Sprintf("%d %s", n, v))
			}
		}
		reg = j.Registry.Dir + ": " + strings.Join(parts, ", ")
	}
	row("registry", j.Registry.Health, reg)

	if len(j.SocketDirs) == 0 {
		row("sockets", HealthSkip.String(), "no live session publishes a socket")
	}
	for _, s := range j.SocketDirs {
		mode := s.Mode
		if mode == "" {
			mode = "-"
		}
		text := fmt.Sprintf("%s (mode %s, uid %d; %s)", s.Dir, mode, s.UID, domain.Count(s.Sessions, "live session"))
		if s.Problem != "" {
			text += ": " + s.Problem
		}
		row("sockets", s.Health, text)
	}

	switch {
	case len(j.Reach.Unreachable) > 0:
		for _, u := range j.Reach.Unreachable {
			row("reach", j.Reach.Health, fmt.Sprintf("session %s %q (pid %d) is unreachable: %s", u.SessionID, u.Name, u.PID, u.Reason))
		}
	case j.Reach.Reachable > 0:
		row("reach", j.Reach.Health, fmt.Sprintf("%s with a socket there", domain.Count(j.Reach.Reachable, "live session")))
	default:
		row("reach", j.Reach.Health, "no live session publishes a socket")
	}

	sess := "not inside a session"
	switch {
	case j.Session.SessionID != "":
		sess = fmt.Sprintf("inside session %s %q (pid %d, found by %s)", j.Session.SessionID, j.Session.Name, j.Session.PID, j.Session.Via)
	case j.Session.Inside:
		sess = "inside a session (variables " + strings.Join(j.Session.EnvVars, " ") + "), but no live record matches it"
	}
	row("session", "info", sess)
	harnessRows(true)
	row("mcp", j.MCP.Health, j.MCP.Note)

	if j.OK {
		return rows, "peerctl is usable here."
	}
	for _, h := range r.Harnesses {
		// A harness's own words when every problem of the report is its own.
		if h.OnlyProblems != "" && len(h.Problems) > 0 && len(h.Problems) == len(j.Problems) {
			return rows, fmt.Sprintf(h.OnlyProblems, domain.Count(len(j.Problems), "problem"))
		}
	}
	return rows, fmt.Sprintf("peerctl cannot work as configured here: %s.", domain.Count(len(j.Problems), "problem"))
}
