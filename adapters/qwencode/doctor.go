package qwencode

import (
	"context"
	"fmt"

	"github.com/peerctl/peerctl/adapters/qwenregistry"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// DoctorJSON is doctor's "qwen" object (docs/OUTPUT.md): the qwen program,
// whether messaging is on, and Qwen Code's registry.
type DoctorJSON struct {
	Health       string `json:"health"` // ok, warn, skip (qwen not found)
	Program      string `json:"program"`
	Path         string `json:"path"`
	Version      string `json:"version"`
	Messaging    string `json:"messaging"` // on, off, unknown
	MessagingWhy string `json:"messagingWhy"`
	Dir          string `json:"dir"`
	Live         int    `json:"live"`
	Addressable  int    `json:"addressable"`
	Note         string `json:"note"`
	Error        string `json:"error,omitempty"`
}

// Doctor probes the qwen program and its settings (qwencli) and counts
// the live Qwen Code sessions among entries. Qwen Code is optional: a
// missing qwen is Skip, never a problem. A warning is added when qwen runs
// but messaging is off, or when a live session cannot receive messages.
// One row, "qwen".
func (h *Harness) Doctor(ctx context.Context, entries []domain.Entry) []ports.DoctorRow {
	p := h.prober.ProbeQwen(ctx)
	j := DoctorJSON{Program: p.Program, Path: p.Path, Version: p.Version, Messaging: p.Messaging, MessagingWhy: p.MessagingWhy, Dir: qwenregistry.SessionsDir(h.home)}
	for _, e := range entries {
		if e.Record.Harness != qwenregistry.Kind || !e.Live() {
			continue
		}
		j.Live++
		if e.Addressable {
			j.Addressable++
		}
	}
	row := ports.DoctorRow{Key: "qwen"}
	if snap, err := h.registry.Read(ctx); err != nil {
		// Its trouble alone: never a problem of another harness's.
		j.Dir, row.Health = snap.Dir, domain.HealthWarn
		j.Note = fmt.Sprintf("registry not read: %v", err)
		row.Warnings = append(row.Warnings, "qwen: "+j.Note)
		j.Health = row.Health.String()
		row.JSON = j
		row.Lines = []ports.DoctorLine{{Check: "qwen", Health: j.Health, Text: j.Note, Late: true}}
		return []ports.DoctorRow{row}
	}
	switch {
	case p.Err != nil && p.Path == "":
		row.Health = domain.HealthSkip
		j.Note = "qwen not found (" + p.Err.Error() + "); Qwen Code sessions are listed all the same"
	case p.Err != nil:
		row.Health = domain.HealthWarn
		j.Note = p.Err.Error()
		row.Warnings = append(row.Warnings, "qwen: "+j.Note)
	case p.Messaging == "off":
		row.Health = domain.HealthWarn
		j.Note = fmt.Sprintf("%s (%s); messaging off: %s", p.Path, p.Version, p.MessagingWhy)
		row.Warnings = append(row.Warnings, "qwen: messaging is off: "+p.MessagingWhy)
	default:
		row.Health = domain.HealthOK
		j.Note = fmt.Sprintf("%s (%s); messaging %s: %s", p.Path, p.Version, p.Messaging, p.MessagingWhy)
	}
	if p.Err != nil {
		j.Error = p.Err.Error()
	}
	j.Note += "; " + domain.Count(j.Live, "live session") + fmt.Sprintf(", %d addressable", j.Addressable)
	if j.Live > j.Addressable {
		row.Warnings = append(row.Warnings, fmt.Sprintf("qwen: %d live Qwen Code session(s) cannot receive messages (no ipcPath; peerctl list --all says why)", j.Live-j.Addressable))
	}
	j.Health = row.Health.String()
	row.JSON = j
	row.Lines = []ports.DoctorLine{{Check: "qwen", Health: j.Health, Text: j.Note, Late: true}}
	return []ports.DoctorRow{row}
}
