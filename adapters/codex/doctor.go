package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/peerctl/peerctl/adapters/codexapp"
	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// probeTimeout bounds `codex --version` and the daemon check each.
const probeTimeout = 5 * time.Second

// DoctorJSON is doctor's "codex" object (docs/OUTPUT.md).
type DoctorJSON struct {
	Health  string `json:"health"` // ok, warn, skip (codex not found, no home)
	Program string `json:"program"`
	Path    string `json:"path"`
	Version string `json:"version"`
	Home    string `json:"home"`
	// Daemon is "reachable", "absent" (no control socket: no TUI started
	// one, or it stopped), or "unreachable" (Error says why).
	Daemon      string `json:"daemon"`
	Live        int    `json:"live"`
	Addressable int    `json:"addressable"`
	Note        string `json:"note"`
	Error       string `json:"error,omitempty"`
}

// Doctor checks the codex program (found, its version), whether the
// home's app-server daemon answers initialize, and counts the live Codex
// threads among entries. Codex is optional: a missing codex is Skip; a
// daemon that does not answer, or a control socket that is not ours, is a
// warning. One row, "codex".
func (h *Harness) Doctor(ctx context.Context, entries []domain.Entry) []ports.DoctorRow {
	j := DoctorJSON{Program: h.program, Home: h.home}
	if j.Program == "" {
		j.Program = "codex"
	}
	for _, e := range entries {
		if e.Record.Harness == Kind && e.Live() {
			j.Live++
			if e.Addressable {
				j.Addressable++
			}
		}
	}
	row := ports.DoctorRow{Key: "codex", Health: domain.HealthOK}
	var notes []string
	if path, err := presence.Find(j.Program); err != nil {
		row.Health = domain.HealthSkip
		j.Error = err.Error()
		notes = append(notes, fmt.Sprintf("codex not found (%v); Codex threads are listed all the same, --transport queue needs it", err))
	} else {
		j.Path = path
		j.Version, err = programVersion(ctx, path)
		if err != nil {
			row.Health = domain.HealthWarn
			j.Error = err.Error()
			row.Warnings = append(row.Warnings, "codex: "+err.Error())
		}
		notes = append(notes, fmt.Sprintf("%s (%s)", path, orUnknown(j.Version)))
	}
	if h.home == "" {
		j.Daemon = "absent"
		notes = append(notes, "home not located")
	} else {
		j.Daemon = "reachable"
		if err := daemonAnswers(ctx, h.home); errors.Is(err, codexapp.ErrNoDaemon) {
			j.Daemon = "absent"
			notes = append(notes, "no app-server daemon (a plain codex TUI starts one)")
		} else if err != nil {
			j.Daemon = "unreachable"
			if row.Health != domain.HealthWarn {
				row.Health = domain.HealthWarn
			}
			if j.Error == "" {
				j.Error = err.Error()
			}
			row.Warnings = append(row.Warnings, "codex: daemon: "+err.Error())
			notes = append(notes, "daemon unreachable: "+err.Error())
		} else {
			notes = append(notes, "daemon reachable at "+codexapp.ControlSocket(h.home))
		}
	}
	j.Note = strings.Join(notes, "; ") + "; " + domain.Count(j.Live, "live thread") + fmt.Sprintf(", %d addressable", j.Addressable)
	j.Health = row.Health.String()
	row.JSON = j
	row.Lines = []ports.DoctorLine{{Check: "codex", Health: j.Health, Text: j.Note, Late: true}}
	return []ports.DoctorRow{row}
}

// daemonAnswers checks the control socket and runs initialize on it.
func daemonAnswers(ctx context.Context, home string) error {
	sock, err := codexapp.Socket(home, getuid())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := codexapp.Open(ctx, sock, version())
	if err != nil {
		return daemonSilent(home, "/proc", probeTimeout, err)
	}
	return c.Close()
}

// programVersion runs `<path> --version` (bounded; its process group
// ended after) and returns its first line ("codex-cli 0.171.0").
func programVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.Command(path, "--version")
	cmd.WaitDelay = 2 * time.Second
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out := &procgroup.Output{Max: 4096}
	cmd.Stdout = out
	if err := procgroup.Run(ctx, cmd); err != nil {
		return "", fmt.Errorf("run %s --version: %w", path, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out.Bytes())), "\n")
	return line, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}
