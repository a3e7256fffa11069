package opencode

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// DoctorJSON is doctor's "opencode" object (docs/OUTPUT.md).
type DoctorJSON struct {
	// Health is ok, or warn when a server could not be read or asks for
	// a password peerctl lacks, or skip when the opencode program is
	// not found (and nothing warns).
	Health string `json:"health"`
	// Servers are the addresses of the live opencode servers found
	// (the addresses dialled: "127.0.0.1:<port>", "[::1]:<port>"; a
	// password-protected one's too), sorted.
	Servers []string `json:"servers"`
	// PlainTUIs counts the TUIs started without --port (unreachable).
	PlainTUIs   int `json:"plain_tuis"`
	Live        int `json:"live"`
	Addressable int `json:"addressable"`
	// Password says whether OPENCODE_SERVER_PASSWORD is set for peerctl
	// (never its value).
	Password bool   `json:"password"`
	Note     string `json:"note"`
}

// Doctor counts, from entries, the live opencode servers, plain TUIs and
// sessions; a server peerctl cannot read or that asks for a password is a
// warning. opencode is optional: none running is ok, and its program not
// found (presence.Find) is a skip, as a missing qwen or codex is. One
// row, "opencode".
// On a system where no opencode process can be found (unsupported), the
// row says so instead: warn when opencode has run for this user (its
// database exists), else skip.
func (h *Harness) Doctor(_ context.Context, entries []domain.Entry) []ports.DoctorRow {
	if why := unsupported(h.registry.goos); why != "" {
		return []ports.DoctorRow{unsupportedRow(why, used(h.db), h.auth.Set())}
	}
	j := DoctorJSON{Password: h.auth.Set(), Servers: []string{}}
	row := ports.DoctorRow{Key: "opencode", Health: domain.HealthOK}
	servers := map[string]bool{}
	var locked []string // what the password-protected servers said
	for _, e := range entries {
		r := e.Record
		if r.Harness != Kind {
			continue
		}
		switch {
		case r.Problem != "":
			row.Health = domain.HealthWarn
			row.Warnings = append(row.Warnings, "opencode: "+r.Problem)
			continue
		case !e.Live():
			continue
		case r.Kind == KindPlainTUI:
			j.PlainTUIs++
		case r.Kind == KindLocked || r.Kind == KindRefused:
			row.Health = domain.HealthWarn
			row.Warnings = append(row.Warnings, fmt.Sprintf("opencode: pid %d: %s", r.PID, e.Unaddressable))
			locked = append(locked, fmt.Sprintf("pid %d: %s", r.PID, e.Unaddressable))
		}
		if r.SocketPath != "" {
			servers[r.SocketPath] = true
		}
		if r.SessionID != "" {
			j.Live++
			if e.Addressable {
				j.Addressable++
			}
		}
	}
	for s := range servers {
		j.Servers = append(j.Servers, s)
	}
	sort.Strings(j.Servers)
	notes := []string{domain.Count(len(j.Servers), "server")}
	if len(j.Servers) > 0 {
		notes[0] += " (" + strings.Join(j.Servers, ", ") + ")"
	}
	if j.PlainTUIs > 0 {
		notes = append(notes, fmt.Sprintf("%d plain TUI(s) that cannot be reached (%s)", j.PlainTUIs, FixPlainTUI))
	}
	if j.Password {
		notes = append(notes, PasswordEnv+" set")
	}
	sort.Strings(locked)
	notes = append(notes, locked...)
	// opencode is optional: its program not found is a skip, as qwen's
	// and codex's are (unless something above warns); servers are found
	// all the same.
	if _, err := presence.Find(Program); err != nil {
		if row.Health == domain.HealthOK {
			row.Health = domain.HealthSkip
		}
		notes = append([]string{fmt.Sprintf("%s not found (%v); opencode servers are found all the same", Program, err)}, notes...)
	}
	j.Note = strings.Join(notes, "; ") + "; " + domain.Count(j.Live, "live session") + fmt.Sprintf(", %d addressable", j.Addressable)
	j.Health = row.Health.String()
	row.JSON = j
	row.Lines = []ports.DoctorLine{{Check: "opencode", Health: j.Health, Text: j.Note, Late: true}}
	return []ports.DoctorRow{row}
}

// unsupportedRow is doctor's row on a system where no opencode process can
// be found: why, as a warning when opencode is used here, else skipped.
func unsupportedRow(why string, used, password bool) ports.DoctorRow {
	row := ports.DoctorRow{Key: "opencode", Health: domain.HealthSkip}
	if used {
		row.Health = domain.HealthWarn
		row.Warnings = []string{"opencode: " + why}
	}
	j := DoctorJSON{Health: row.Health.String(), Servers: []string{}, Password: password, Note: why}
	row.JSON = j
	row.Lines = []ports.DoctorLine{{Check: "opencode", Health: j.Health, Text: why, Late: true}}
	return row
}
