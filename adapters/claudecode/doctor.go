package claudecode

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/peerctl/peerctl/adapters/courierexec"
	"github.com/peerctl/peerctl/adapters/internal/presence"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/ports"
)

// DoctorJSON is doctor's "claude" object (docs/OUTPUT.md): the courier
// program's probe.
type DoctorJSON struct {
	Health  string     `json:"health"` // ok, fail, skip (claude not found, Claude Code not used here)
	Program string     `json:"program"`
	Path    string     `json:"path"`
	Version string     `json:"version"`
	Flags   []FlagJSON `json:"flags"`
	Error   string     `json:"error,omitempty"`
	// Courier is the courier run that sends nothing (absent when not run).
	Courier *CourierJSON `json:"courier,omitempty"`
}

// CourierJSON is the courier run of DoctorJSON.
type CourierJSON struct {
	Talks     bool     `json:"talks"`     // it reached peerctl's endpoint and ended its turn
	Tools     []string `json:"tools"`     // the tools its request offered
	StartupMs int64    `json:"startupMs"` // process start to the end of its turn, milliseconds
	Error     string   `json:"error,omitempty"`
}

// FlagJSON is one courier flag and whether `claude --help` lists it.
type FlagJSON struct {
	Flag    string `json:"flag"`
	Present bool   `json:"present"`
}

// noClaudeNeeded is said with every problem that stops the courier only.
const noClaudeNeeded = "send --transport socket, list, show and watch do not need claude"

// Doctor probes the courier program (courierexec.Transport.Probe: the program, its
// flags, and one courier run that sends nothing). A courier that cannot
// run is a problem: it is the default transport. A claude not found on a
// machine where Claude Code is not in use (no registry folder nor
// transcripts in its config dir, the dir not named, the program not
// named: the user of another harness, whose tools may make a bare config
// dir) is Skip, as a missing qwen or codex is. Rows: "claude" (JSON
// DoctorJSON) and, when the courier ran, "courier".
func (h *Harness) Doctor(ctx context.Context, _ []domain.Entry) []ports.DoctorRow {
	used := h.programNamed || presence.Of(h.named, "", filepath.Join(h.configDir, "sessions"), filepath.Join(h.configDir, "projects"))
	return []ports.DoctorRow{doctorRow(h.courier.Probe(ctx), used)}
}

// doctorRow is the probe's row; used says Claude Code is used here (its
// state there, or its home or program named), so that a claude not found
// is a problem rather than a skip.
func doctorRow(probe courierexec.ProgramProbe, used bool) ports.DoctorRow {
	row := ports.DoctorRow{Key: "claude", Health: domain.HealthOK,
		OnlyProblems: "The courier (the default transport) cannot run here: %s."}
	fail := func(p string) {
		row.Health = domain.HealthFail
		row.Problems = append(row.Problems, p)
	}
	// programHealth is the "claude" line's: the program's own state. A
	// courier run that fails is the "courier" line's, not the program's.
	programHealth := func() domain.Health { return row.Health }
	switch {
	case probe.Err != nil && probe.Path == "" && !used:
		row.Health = domain.HealthSkip
	case probe.Err != nil && probe.Path == "":
		fail("claude not found: install Claude Code, or pass --claude or set $PEERCTL_CLAUDE (" + noClaudeNeeded + ")") // the row says where it was looked for
	case probe.Err != nil:
		fail(fmt.Sprintf("claude: %v: the courier (the default transport) cannot run (%s)", probe.Err, noClaudeNeeded))
	case len(probe.Missing) > 0:
		for _, f := range probe.Missing {
			fail(fmt.Sprintf("claude: %s has no %s flag in --help; the courier needs it", programAt(probe), f))
		}
	case probe.Courier != nil && probe.Courier.Err != nil:
		fail(fmt.Sprintf("claude: a courier run that sends nothing failed: %v (%s)", probe.Courier.Err, noClaudeNeeded))
		programHealth = func() domain.Health { return domain.HealthOK }
	case probe.Courier != nil && !slices.Contains(probe.Courier.Tools, "SendMessage"):
		fail(fmt.Sprintf("claude: %s did not offer SendMessage to the courier (tools offered: %s); the courier needs it (%s)",
			programAt(probe), strings.Join(probe.Courier.Tools, ", "), noClaudeNeeded))
	case probe.Unfit != "":
		// Its courier run may talk and be offered SendMessage, yet every send fails.
		fail(fmt.Sprintf("claude: %s %s (%s)", programAt(probe), probe.Unfit, noClaudeNeeded))
	}

	j := DoctorJSON{Health: row.Health.String(), Program: probe.Program, Path: probe.Path, Version: probe.Version, Flags: []FlagJSON{}}
	if probe.Err != nil {
		j.Error = probe.Err.Error()
	}
	missing := map[string]bool{}
	for _, f := range probe.Missing {
		missing[f] = true
	}
	if probe.Err == nil {
		for _, f := range probe.Flags {
			j.Flags = append(j.Flags, FlagJSON{Flag: f, Present: !missing[f]})
		}
	}
	text := j.Error
	switch {
	case row.Health == domain.HealthSkip:
		text = "claude not found (" + j.Error + "); Claude Code is not in use here: its sessions cannot be sent to until it is installed"
	case probe.Err != nil && probe.Path == "":
		text = "claude not found (" + j.Error + ")" // as every harness's program not found is said
	}
	if text == "" {
		text = fmt.Sprintf("%s; courier flags: %d of %d present", programAt(probe), len(j.Flags)-len(probe.Missing), len(j.Flags))
		if len(probe.Missing) > 0 {
			text += ", missing " + strings.Join(probe.Missing, " ")
		}
	}
	row.Lines = []ports.DoctorLine{{Check: "claude", Health: programHealth().String(), Text: text}}
	if cp := probe.Courier; cp != nil {
		j.Courier = &CourierJSON{Talks: cp.Err == nil, Tools: append([]string{}, cp.Tools...), StartupMs: cp.Startup.Milliseconds()}
		line := ports.DoctorLine{Check: "courier", Health: domain.HealthOK.String(),
			Text: fmt.Sprintf("talks to peerctl's endpoint, offered SendMessage; start-up %d ms", j.Courier.StartupMs), Late: true}
		if cp.Err != nil {
			j.Courier.Error = cp.Err.Error()
			line.Text, line.Health = j.Courier.Error, domain.HealthFail.String()
		}
		row.Lines = append(row.Lines, line)
	}
	row.JSON = j
	return row
}

// programAt names the program probed and its version for a line of
// doctor: "/opt/claude (Claude Code 2.1.332)" from claude --version's
// "2.1.332 (Claude Code)", never one parenthesis inside another.
func programAt(probe courierexec.ProgramProbe) string {
	v := probe.Version
	if n, ok := strings.CutSuffix(v, " (Claude Code)"); ok {
		v = "Claude Code " + n
	}
	if v == "" {
		v = "version unknown"
	}
	return probe.Path + " (" + v + ")"
}
