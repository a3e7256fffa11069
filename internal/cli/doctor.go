package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/peerctl/peerctl/adapters/procgroup"
	"github.com/peerctl/peerctl/app"
	"github.com/peerctl/peerctl/cmd/wiring"
	"github.com/peerctl/peerctl/domain"
	"github.com/peerctl/peerctl/internal/jsonexact"
	"github.com/peerctl/peerctl/internal/wire"
	"github.com/peerctl/peerctl/ports"
)

// doctorJSON is `doctor --json` output (docs/OUTPUT.md).
// Each harness adds its own object (ports.DoctorRow.JSON) under its key
// ("claude", "qwen"), written after "ok".
type doctorJSON struct {
	OK         bool               `json:"ok"`
	Registry   doctorRegistryJSON `json:"registry"`
	SocketDirs []doctorSocketJSON `json:"socketDirs"`
	Reach      doctorReachJSON    `json:"reach"`
	Session    doctorSessionJSON  `json:"session"`
	MCP        doctorMCPJSON      `json:"mcp"`
	Problems   []string           `json:"problems"`
	Warnings   []string           `json:"warnings"`
	// harnesses are the harness plug-ins' rows.
	harnesses []ports.DoctorRow
}

// MarshalJSON writes the object with every harness's row after "ok".
func (j doctorJSON) MarshalJSON() ([]byte, error) {
	type plain doctorJSON
	body, err := json.Marshal(plain(j))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"ok":` + strconv.FormatBool(j.OK))
	for _, row := range j.harnesses {
		v, err := json.Marshal(row.JSON)
		if err != nil {
			return nil, err
		}
		b.WriteString("," + strconv.Quote(row.Key) + ":")
		b.Write(v)
	}
	_, rest, _ := bytes.Cut(body, []byte(","))
	b.WriteString(",")
	b.Write(rest)
	return b.Bytes(), nil
}

// doctorMCPJSON is where `peerctl mcp`'s server is: linked into this
// program, or the peerctl-mcp it runs (mcpprogram.go).
type doctorMCPJSON struct {
	Health string `json:"health"`
	Path   string `json:"path"`
	Note   string `json:"note"`
}

// doctorMCP checks what `peerctl mcp` would run. Never a problem: only
// peerctl mcp needs peerctl-mcp. A peerctl-mcp without the server is a
// warning.
func (c *cli) doctorMCP(ctx context.Context) doctorMCPJSON {
	if c.serveMCP != nil {
		self, _ := c.executable()
		return doctorMCPJSON{Health: app.HealthOK.String(), Path: self, Note: "the MCP server is linked into this program (peerctl mcp serves)"}
	}
	path, err := c.findMCPProgram()
	switch {
	case err == nil:
		if differs := c.mcpBuildDiffers(ctx, path); differs != "" {
			return doctorMCPJSON{Health: app.HealthWarn.String(), Path: path, Note: differs}
		}
		return doctorMCPJSON{Health: app.HealthOK.String(), Path: path, Note: path + " (peerctl mcp runs it)"}
	case errors.Is(err, errNoMCPServer), errors.Is(err, errUnusableMCP):
		return doctorMCPJSON{Health: app.HealthWarn.String(), Note: err.Error()}
	default:
		return doctorMCPJSON{Health: app.HealthSkip.String(), Note: "no " + mcpProgram + " beside peerctl or on PATH: only peerctl mcp needs it; " + mcpInstallHint}
	}
}

// mcpVersionTimeout bounds doctor's "peerctl-mcp version --json".
var mcpVersionTimeout = 10 * time.Second

// mcpBuildDiffers runs "path version --json" (bounded by mcpVersionTimeout,
// its whole process group ended afterwards, at most 64 KiB of its output
// read; ctx ends it too, as Ctrl-C does) and says
// how that build differs from this one, or "" when it is the same build
// (module, version, revision, modified) or cannot say: peerctl mcp serves
// what peerctl-mcp was built from, so a peerctl-mcp left from an older
// install serves older tools.
func (c *cli) mcpBuildDiffers(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, mcpVersionTimeout)
	defer cancel()
	out := &procgroup.Output{Max: 64 << 10}
	cmd := exec.Command(path, "version", "--json")
	cmd.Env, cmd.Stdout = c.environ(), out
	if err := procgroup.Run(ctx, cmd); err != nil {
		return fmt.Sprintf("%s (peerctl mcp runs it) did not say its version: %v", path, err)
	}
	var them versionJSON
	if err := json.Unmarshal(out.Bytes(), &them); err != nil {
		return fmt.Sprintf("%s (peerctl mcp runs it) printed no version: %v", path, err)
	}
	if them.Version == "" {
		them.Version = "(no version)"
	}
	us := c.version()
	if them.Module == us.Module && them.Version == us.Version && them.Revision == us.Revision && them.Modified == us.Modified {
		return ""
	}
	return fmt.Sprintf("%s (peerctl mcp runs it) is another build: %s; this peerctl is %s; install both from one source (make build, or go install ./cmd/...)",
		path, them.short(), us.short())
}

type doctorRegistryJSON struct {
	Health  string         `json:"health"`
	Dir     string         `json:"dir"`
	Missing bool           `json:"missing"`
	Error   string         `json:"error,omitempty"`
	Counts  map[string]int `json:"counts"`
}

type doctorSocketJSON struct {
	Health   string `json:"health"`
	Dir      string `json:"dir"`
	Mode     string `json:"mode"` // octal, e.g. "0700"; "" when not stat-able
	UID      int    `json:"uid"`  // -1 when unknown
	Ours     bool   `json:"ours"`
	Sessions int    `json:"sessions"`
	Problem  string `json:"problem,omitempty"`
}

// doctorReachJSON: whether the live sessions' sockets can be connected to
// (there, a socket, a path short enough); nothing is connected to.
type doctorReachJSON struct {
	Health      string                  `json:"health"` // ok, warn (some unreachable), skip (none publishes a socket)
	Reachable   int                     `json:"reachable"`
	Unreachable []doctorUnreachableJSON `json:"unreachable"`
}

type doctorUnreachableJSON struct {
	SessionID  string `json:"sessionId"`
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	SocketPath string `json:"socketPath"`
	Reason     string `json:"reason"`
}

type doctorSessionJSON struct {
	Inside    bool     `json:"inside"`
	EnvVars   []string `json:"envVars"`
	Via       string   `json:"via"`
	SessionID string   `json:"sessionId,omitempty"`
	Name      string   `json:"name,omitempty"`
	PID       int      `json:"pid,omitempty"`
	Endpoint  string   `json:"endpoint,omitempty"`
	Note      string   `json:"note,omitempty"`
}

func (c *cli) doctorCmd() *cobra.Command {
	var (
		asJSON bool
		hosts  []string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that peerctl can work here (never sends, never spends tokens)",
		Long:  helpLong(`Check the setup of `+wiring.Plugins().Titles("and")+` (each one's program, registry and sessions) and of peerctl-mcp, without sending`, "doctor"),
		Example: `  peerctl doctor
  peerctl doctor --json | jq '.problems[]'
  peerctl doctor --claude ~/bin/claude
  peerctl doctor --host dev-box`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dests, err := parseHosts(hosts, false)
			if err != nil {
				return err
			}
			c.started()
			c.jsonOut = asJSON // a refusal prints as JSON too
			if len(dests) == 1 && !dests[0].IsLocal() {
				return c.hostDoctor(cmd.Context(), dests[0], asJSON)
			}
			var procs ports.Processes
			svc, err := c.service(options{}, &procs)
			if err != nil {
				return err
			}
			r := svc.Doctor(cmd.Context(), procs, app.DoctorEnv{Self: c.pid, Environ: c.environ(), UID: c.uid})
			j := doctorToJSON(r)
			j.MCP = c.doctorMCP(cmd.Context())
			if j.MCP.Health == app.HealthWarn.String() {
				j.Warnings = append(j.Warnings, j.MCP.Note)
			}
			if asJSON {
				if err := c.writeJSON(j); err != nil {
					return err
				}
			} else if err := c.printDoctor(j); err != nil {
				return err
			}
			for _, p := range r.Problems {
				fmt.Fprintf(c.stderr, "peerctl: problem: %s\n", safe(p))
			}
			if !r.OK {
				return errDoctor
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (fields: docs/OUTPUT.md)")
	c.harnessFlags(cmd)
	addHostFlag(cmd, &hosts, false)
	return cmd
}

// hostDoctor is the far side's doctor (its own settings are checked
// there): its report printed here, JSON checked to be one object and
// escaped, text escaped; its exit code.
func (c *cli) hostDoctor(ctx context.Context, dest domain.Dest, asJSON bool) error {
	args := []string{"doctor"}
	if asJSON {
		args = append(args, "--json")
	}
	res, err := c.callHost(ctx, dest, args, nil, 0)
	if err != nil {
		return err
	}
	if res.Code != wire.ExitOK && res.Code != wire.ExitError {
		return wire.Failure(dest, res)
	}
	c.printNotes(domain.Dest{}, wire.Lines(res.Stderr))
	if asJSON {
		var doc map[string]json.RawMessage
		if err := jsonexact.Exact(bytes.TrimSpace(res.Stdout), &doc); err != nil {
			return wire.Broken(dest, err)
		}
		if err := c.writeJSON(json.RawMessage(bytes.TrimSpace(res.Stdout))); err != nil {
			return err
		}
	} else if _, err := fmt.Fprint(c.stdout, safeText(string(res.Stdout))); err != nil {
		return err
	}
	if res.Code != wire.ExitOK {
		return errDoctor
	}
	return nil
}

// errDoctor ends `peerctl doctor` with exit code 1 after it printed its
// problems (execute prints nothing more for it).
var errDoctor = silentError{code: wire.ExitError}

// silentError carries an exit code for a command that already reported.
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }

func doctorToJSON(r app.Report) doctorJSON {
	j := doctorJSON{OK: r.OK, Problems: r.Problems, Warnings: r.Warnings}
	if j.Problems == nil {
		j.Problems = []string{}
	}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	j.harnesses = r.Harnesses
	j.Registry = doctorRegistryJSON{Health: r.Registry.Health.String(), Dir: r.Registry.Dir, Missing: r.Registry.Missing, Counts: r.Registry.Counts}
	if r.Registry.Err != nil {
		j.Registry.Error = r.Registry.Err.Error()
	}
	j.SocketDirs = []doctorSocketJSON{}
	for _, s := range r.Sockets {
		mode := ""
		if s.Mode != 0 || s.UID >= 0 {
			mode = fmt.Sprintf("%04o", uint32(s.Mode))
		}
		j.SocketDirs = append(j.SocketDirs, doctorSocketJSON{Health: s.Health.String(), Dir: s.Dir, Mode: mode, UID: s.UID, Ours: s.Ours, Sessions: s.Sessions, Problem: s.Problem})
	}
	j.Reach = doctorReachJSON{Health: app.HealthOK.String(), Reachable: r.Reachable, Unreachable: []doctorUnreachableJSON{}}
	for _, u := range r.Reach {
		j.Reach.Health = app.HealthWarn.String()
		j.Reach.Unreachable = append(j.Reach.Unreachable, doctorUnreachableJSON{SessionID: u.SessionID, Name: u.Name, PID: u.PID, SocketPath: u.SocketPath, Reason: u.Reason})
	}
	if len(r.Reach) == 0 && r.Reachable == 0 {
		j.Reach.Health = app.HealthSkip.String()
	}
	j.Session = doctorSessionJSON{Inside: r.Session.Inside, EnvVars: r.Session.EnvVars, Via: app.ViaNone.String(), Note: r.Session.Note}
	if j.Session.EnvVars == nil {
		j.Session.EnvVars = []string{}
	}
	if f := r.Session.Found; f != nil {
		rec := f.Entry.Record
		j.Session.Via, j.Session.SessionID, j.Session.Name, j.Session.PID = f.Via.String(), rec.SessionID, rec.Name, rec.PID
		j.Session.Endpoint = f.Entry.Endpoint().String()
	}
	return j
}

func (c *cli) printDoctor(j doctorJSON) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	row := func(check, health, text string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", check, health, cell(text)) }

	lines := func(late bool) {
		for _, h := range j.harnesses {
			for _, l := range h.Lines {
				if l.Late == late {
					row(l.Check, l.Health, l.Text)
				}
			}
		}
	}
	lines(false)

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
		row("sockets", app.HealthSkip.String(), "no live session publishes a socket")
	}
	for _, s := range j.SocketDirs {
		text := fmt.Sprintf("%s (mode %s, uid %d; %s)", s.Dir, orDashS(s.Mode), s.UID, plural(s.Sessions, "live session"))
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
		row("reach", j.Reach.Health, fmt.Sprintf("%s with a socket there", plural(j.Reach.Reachable, "live session")))
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
	lines(true)
	row("mcp", j.MCP.Health, j.MCP.Note)
	if err := tw.Flush(); err != nil {
		return err
	}
	switch only := onlyProblems(j); {
	case j.OK:
		fmt.Fprintln(c.stdout, "peerctl is usable here.")
	case only != "":
		fmt.Fprintf(c.stdout, only+"\n", plural(len(j.Problems), "problem"))
	default:
		fmt.Fprintf(c.stdout, "peerctl cannot work as configured here: %s.\n", plural(len(j.Problems), "problem"))
	}
	return nil
}

// onlyProblems is the summary a harness row gives (ports.DoctorRow
// OnlyProblems) when every problem of the report is its own; "" otherwise.
func onlyProblems(j doctorJSON) string {
	for _, h := range j.harnesses {
		if h.OnlyProblems != "" && len(h.Problems) > 0 && len(h.Problems) == len(j.Problems) {
			return h.OnlyProblems
		}
	}
	return ""
}

func orDashS(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
